/**
 * Socket descriptors from the agent to a session worker, over a unix socket
 * pair of their own (the worker's fd 5), as SCM_RIGHTS.
 *
 * Node passes handles only on its IPC channel, whose parser lives in the
 * agent and throws there on a byte a worker's kernel wrote to it (issue 27).
 * The agent's messages to a worker travel on a channel of our own framing
 * (worker-channel.ts); the sockets those messages announce travel here,
 * sent before the message that names them, so a worker that reads the
 * message finds its socket already waiting. Only the agent sends on this
 * pair: what a worker writes to it is never read.
 *
 * libc's sendmsg and recvmsg through koffi, the FFI the backends use. The
 * control message is laid out for the ABI at hand: `struct cmsghdr` is a
 * size_t length and two ints, its data aligned to size_t (16 bytes of header
 * on 64-bit Linux, 12 on armv7l).
 */
import koffi from "koffi";

const SOL_SOCKET = 1;
const SCM_RIGHTS = 1;
const MSG_DONTWAIT = 0x40;
const MSG_NOSIGNAL = 0x4000;
const MSG_CMSG_CLOEXEC = 0x40000000;
const EINTR = 4;

const SIZE_T = koffi.sizeof("size_t");
/** CMSG_ALIGN(sizeof(struct cmsghdr)): where a control message's data begins. */
const CMSG_HEADER = align(SIZE_T + 8);
/** CMSG_LEN(sizeof(int)) and CMSG_SPACE(sizeof(int)): one descriptor. */
const CMSG_LEN = CMSG_HEADER + 4;
const CMSG_SPACE = CMSG_HEADER + align(4);

function align(n: number): number {
  return Math.ceil(n / SIZE_T) * SIZE_T;
}

interface Libc {
  sendmsg(fd: number, msg: object, flags: number): number;
  recvmsg(fd: number, msg: Record<string, unknown>, flags: number): number;
}

let libc: Libc | undefined;

function load(): Libc {
  if (libc) return libc;
  const lib = koffi.load("libc.so.6");
  const iovec = koffi.struct("kfarm_iovec", { base: "void *", len: "size_t" });
  koffi.struct("kfarm_msghdr", {
    name: "void *",
    namelen: "uint32_t",
    iov: koffi.pointer(iovec),
    iovlen: "size_t",
    control: "void *",
    controllen: "size_t",
    flags: "int",
  });
  libc = {
    sendmsg: lib.func("long sendmsg(int fd, const kfarm_msghdr *msg, int flags)") as Libc["sendmsg"],
    recvmsg: lib.func("long recvmsg(int fd, _Inout_ kfarm_msghdr *msg, int flags)") as Libc["recvmsg"],
  };
  return libc;
}

/** The descriptor behind a Node socket or server (libuv's own; Node has no public getter). */
export function descriptorOf(handleOwner: object): number {
  const fd = (handleOwner as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof fd !== "number" || fd < 0) throw new Error("the socket has no descriptor (closed already)");
  return fd;
}

/**
 * Sends a copy of descriptor `fd` on the unix socket `channel` (one byte of
 * data carries it). Never blocks: the pair's buffer holds thousands of these,
 * and a worker that stopped reading them is stuck anyway.
 */
export function sendDescriptor(channel: number, fd: number): void {
  const { sendmsg } = load();
  const data = Buffer.from([0x68]);
  const control = Buffer.alloc(CMSG_SPACE);
  writeSize(control, 0, CMSG_LEN);
  control.writeInt32LE(SOL_SOCKET, SIZE_T);
  control.writeInt32LE(SCM_RIGHTS, SIZE_T + 4);
  control.writeInt32LE(fd, CMSG_HEADER);
  const msg = { name: null, namelen: 0, iov: [{ base: data, len: 1 }], iovlen: 1, control, controllen: CMSG_SPACE, flags: 0 };
  for (;;) {
    if (sendmsg(channel, msg, MSG_DONTWAIT | MSG_NOSIGNAL) === 1) return;
    const errno = koffi.errno();
    if (errno !== EINTR) throw new Error(`cannot pass a socket to the session worker (sendmsg: errno ${errno})`);
  }
}

/**
 * Takes the next descriptor from the unix socket `channel` (blocking: the
 * agent sent it before the message that announced it). Closed on exec.
 */
export function receiveDescriptor(channel: number): number {
  const { recvmsg } = load();
  const data = Buffer.alloc(1);
  const control = Buffer.alloc(CMSG_SPACE);
  const msg: Record<string, unknown> = { name: null, namelen: 0, iov: [{ base: data, len: 1 }], iovlen: 1, control, controllen: CMSG_SPACE, flags: 0 };
  for (;;) {
    const n = recvmsg(channel, msg, MSG_CMSG_CLOEXEC);
    if (n === 1) break;
    const errno = koffi.errno();
    if (n === 0) throw new Error("the agent's socket channel is closed");
    if (errno !== EINTR) throw new Error(`cannot receive a socket from the agent (recvmsg: errno ${errno})`);
  }
  if (Number(msg.controllen) < CMSG_LEN || control.readInt32LE(SIZE_T) !== SOL_SOCKET || control.readInt32LE(SIZE_T + 4) !== SCM_RIGHTS) {
    throw new Error("the agent's socket channel carried no socket");
  }
  return control.readInt32LE(CMSG_HEADER);
}

function writeSize(buf: Buffer, at: number, value: number): void {
  if (SIZE_T === 8) buf.writeBigUInt64LE(BigInt(value), at);
  else buf.writeUInt32LE(value, at);
}
