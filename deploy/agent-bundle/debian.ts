/**
 * The node of an ARM agent bundle: Debian's, for the board's CPU, with every
 * shared library it loads — glibc and the dynamic loader included — so the
 * bundle runs whatever libc the board has (Pynq images run older Ubuntus).
 *
 * 1. The suite's InRelease, its signature checked with gpgv against
 *    debian-archive-keyring, names the SHA-256 of the architecture's
 *    Packages.xz, fetched by that hash (a mirror mid-update keeps it there).
 * 2. The Depends closure of `nodejs` in that index; each .deb is checked
 *    against the index's SHA-256 and unpacked with `dpkg-deb -x`.
 * 3. Into the stage's lib/: the node binary, the libraries it needs
 *    (DT_NEEDED, transitively) and the loader (PT_INTERP), as plain files.
 *
 * Debian's libnode reads a few builtins (cjs-module-lexer, undici, acorn,
 * minimatch) from /usr/share/nodejs/… as it starts, and aborts without them.
 * Those paths are absolute and a board has no such files, so the build
 * rewrites them in the binary to /proc/self/fd/9/… — the same length, so
 * nothing moves — and the `node` launcher opens lib/nodejs/ as descriptor 9.
 *
 * Downloads are cached (dist/debs/): a rebuild fetches only InRelease, and
 * without a network it uses the cached one.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  createWriteStream,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream } from "node:stream/web";
import { readElf, type ElfInfo } from "./elf.ts";
import { BundleError, DownloadError } from "./errors.ts";

export const DEBIAN_SUITE = "trixie";
export const DEFAULT_DEBIAN_MIRROR = "http://deb.debian.org/debian";
/** Debian's archive keys (the debian-archive-keyring package). */
export const DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg";
/** The Node.js major kernelfarm runs on (package.json engines; the agent is tested on it). */
export const NODE_MAJOR = 20;
/** Descriptor the `node` launcher opens lib/nodejs/ as. */
export const BUILTINS_FD = 9;
/** Folder under lib/ holding the builtins libnode reads from files. */
export const BUILTINS_DIR = "nodejs";

const DEBIAN_BUILTINS_PREFIX = "/usr/share/nodejs/";
// Padded with slashes to the same length: the rewritten strings keep their places, and tail-merged strings stay intact.
const BUNDLE_BUILTINS_PREFIX = `/proc/self/fd/${BUILTINS_FD}///`;
if (BUNDLE_BUILTINS_PREFIX.length !== DEBIAN_BUILTINS_PREFIX.length) throw new Error("the builtins prefixes must have one length");

/** One .deb may take a while on a slow link; a stalled one fails instead of hanging the build. */
const DOWNLOAD_TIMEOUT_MS = 5 * 60_000;

export interface DebianArch {
  /** Debian's name of the architecture. */
  readonly arch: "arm64" | "armhf";
  /** The multiarch library folder (usr/lib/TRIPLET). */
  readonly triplet: string;
  /** ELF e_machine of its binaries. */
  readonly machine: number;
}

export interface DebianNodeOptions {
  /** Where downloads are kept between builds. */
  readonly cacheDir: string;
  readonly mirror: string;
  /** Take the mirror's package index when its signed release file names another (a mirror out of sync). */
  readonly allowUnsignedIndex: boolean;
  readonly log: (line: string) => void;
}

export interface DebianNode {
  /** Debian's version of nodejs, e.g. 20.19.2+dfsg-1+deb13u3. */
  readonly debianVersion: string;
  /** Node's own version, e.g. v20.19.2. */
  readonly nodeVersion: string;
  /** glibc's version (of libc6), e.g. 2.41. */
  readonly glibc: string;
  /** The dynamic loader's file name in lib/. */
  readonly loader: string;
  /** Whether the package index was the one Debian's signed release file names. */
  readonly signedIndex: boolean;
  /** Every package fetched, by name: its version. */
  readonly packages: Readonly<Record<string, string>>;
  /** The libraries in lib/ (sonames). */
  readonly libraries: readonly string[];
  /** The builtins in lib/nodejs/, relative to it. */
  readonly builtins: readonly string[];
  readonly files: number;
  readonly bytes: number;
  readonly downloadedBytes: number;
}

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

/** Fetches `url` into `dest` (through a partial file), or throws a DownloadError that names the URL and what to do. */
export async function download(url: string, dest: string, what: string, remedy: string): Promise<number> {
  const fail = (why: string, status?: number) => new DownloadError(`could not download ${what} from ${url}: ${why}. ${remedy}`, status);
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause?.message;
    throw fail(`${(err as Error).message}${cause ? ` (${cause})` : ""}`);
  }
  if (!res.ok || !res.body) throw fail(`HTTP ${res.status} ${res.statusText}`, res.status);
  mkdirSync(dirname(dest), { recursive: true });
  const partial = `${dest}.partial-${process.pid}`;
  try {
    await pipeline(Readable.fromWeb(res.body as ReadableStream<Uint8Array>), createWriteStream(partial));
  } catch (err) {
    rmSync(partial, { force: true });
    throw fail((err as Error).message);
  }
  renameSync(partial, dest);
  return statSync(dest).size;
}

/** The tools the build runs, and the Debian package of each. */
export const DEBIAN_TOOLS = { gpgv: "gpgv", xz: "xz-utils", "dpkg-deb": "dpkg" } as const;

function run(tool: keyof typeof DEBIAN_TOOLS, args: string[], what: string, maxBuffer = 1 << 20): Buffer {
  try {
    return execFileSync(tool, args, { maxBuffer, stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === "ENOENT")
      throw new BundleError(`${what} needs \`${tool}\`, which is not on the PATH: install it (Debian: apt-get install ${DEBIAN_TOOLS[tool]})`);
    throw new BundleError(`${what}: \`${tool} ${args.join(" ")}\` failed: ${e.stderr?.toString().trim() || e.message}`);
  }
}

// ---------------------------------------------------------------- the index

interface Stanza {
  readonly Package: string;
  readonly Version: string;
  readonly Filename: string;
  readonly SHA256: string;
  readonly Depends?: string;
  readonly "Pre-Depends"?: string;
  readonly Provides?: string;
}

interface Index {
  readonly packages: Map<string, Stanza>;
  /** Virtual package → the real packages that provide it. */
  readonly provides: Map<string, string[]>;
}

function parseIndex(text: string): Index {
  const packages = new Map<string, Stanza>();
  const provides = new Map<string, string[]>();
  for (const block of text.split(/\n\n+/)) {
    const fields: Record<string, string> = {};
    for (const m of block.matchAll(/^([\w-]+): (.*)$/gm)) fields[m[1]!] = m[2]!;
    const s = fields as unknown as Stanza;
    if (!s.Package || !s.Filename || !s.SHA256) continue;
    packages.set(s.Package, s);
    for (const p of (s.Provides ?? "").split(",")) {
      const name = p.trim().split(/[\s(]/)[0];
      if (name) provides.set(name, [...(provides.get(name) ?? []), s.Package]);
    }
  }
  return { packages, provides };
}

/** The signed InRelease's text, fetched (or, offline, the cached one) and checked with gpgv. */
async function signedRelease(o: DebianNodeOptions): Promise<string> {
  const url = `${o.mirror}/dists/${DEBIAN_SUITE}/InRelease`;
  const cached = join(o.cacheDir, `InRelease-${DEBIAN_SUITE}`);
  const fresh = `${cached}.new`;
  try {
    await download(
      url,
      fresh,
      `Debian ${DEBIAN_SUITE}'s release file`,
      `Check that this machine reaches ${new URL(o.mirror).host} (Node's fetch does not use http_proxy), or give a Debian mirror it does reach with --mirror URL`,
    );
  } catch (err) {
    if (!(err instanceof DownloadError) || !existsSync(cached)) throw err;
    o.log(`  cannot reach ${url}: using the release file cached on ${statSync(cached).mtime.toISOString()}`);
  }
  const file = existsSync(fresh) ? fresh : cached;
  if (!existsSync(DEBIAN_KEYRING)) {
    throw new BundleError(
      `${DEBIAN_KEYRING} is missing: the build checks Debian's signature on ${url} with it (Debian/Ubuntu: apt-get install debian-archive-keyring)`,
    );
  }
  const text = run("gpgv", ["--quiet", "--keyring", DEBIAN_KEYRING, "--output", "-", file], `checking the signature of ${url}`, 16 << 20).toString();
  if (file === fresh) renameSync(fresh, cached);
  return text;
}

/** The architecture's package index, by the hash the signed release names. */
/**
 * The architecture's package index: the one the signed release names, by its
 * hash (a mirror mid-update keeps it there), else at its plain path. A mirror
 * that serves only an index the release does not name is out of sync: refused,
 * unless `allowUnsignedIndex` takes it as served (said in the log and BUNDLE.json).
 */
async function packageIndex(target: DebianArch, o: DebianNodeOptions): Promise<{ index: Index; signed: boolean }> {
  const release = await signedRelease(o);
  const path = `main/binary-${target.arch}/Packages.xz`;
  const line = new RegExp(`^ ([0-9a-f]{64})\\s+\\d+\\s+${path.replaceAll(".", "\\.")}$`, "m");
  const sha = line.exec(release.slice(release.indexOf("\nSHA256:")))?.[1];
  if (!sha) throw new BundleError(`Debian ${DEBIAN_SUITE}'s release file names no ${path}: is ${target.arch} still a release architecture?`);
  const file = join(o.cacheDir, `Packages-${DEBIAN_SUITE}-${target.arch}-${sha.slice(0, 16)}.xz`);
  const unpack = (f: string) => parseIndex(run("xz", ["-dc", f], `unpacking ${f}`, 512 << 20).toString());
  if (existsSync(file)) return { index: unpack(file), signed: true };

  const base = `${o.mirror}/dists/${DEBIAN_SUITE}/main/binary-${target.arch}`;
  const remedy = `Check that this machine reaches ${new URL(o.mirror).host}, or give another mirror with --mirror URL`;
  const served = join(o.cacheDir, `Packages-${DEBIAN_SUITE}-${target.arch}.served.xz`);
  try {
    await download(`${base}/by-hash/SHA256/${sha}`, served, `the ${target.arch} package index`, remedy);
  } catch (err) {
    if (!(err instanceof DownloadError) || err.status !== 404) throw err;
    await download(`${base}/Packages.xz`, served, `the ${target.arch} package index`, remedy);
  }
  const actual = sha256(served);
  if (actual === sha) {
    renameSync(served, file);
    return { index: unpack(file), signed: true };
  }
  const date = /^Date: (.*)$/m.exec(release)?.[1] ?? "?";
  if (!o.allowUnsignedIndex) {
    rmSync(served);
    throw new DownloadError(
      `${new URL(o.mirror).host} serves a package index for ${target.arch} (SHA-256 ${actual}) that its signed release file (${date}) ` +
        `does not name (it names ${sha}): the mirror is mid-update or out of sync. Try again later, give another mirror with --mirror URL, ` +
        "or take the index as served with --allow-unsigned-index (each .deb is still checked against it)",
    );
  }
  o.log(
    `  the ${target.arch} package index is the one ${new URL(o.mirror).host} serves, which its signed release file (${date}) does not name (--allow-unsigned-index)`,
  );
  try {
    return { index: unpack(served), signed: false };
  } finally {
    rmSync(served);
  }
}

/** `nodejs` and everything it depends on, transitively (first alternative that exists; virtual names through Provides). */
function dependencyClosure(index: Index, root: string, where: string): Stanza[] {
  const out = new Map<string, Stanza>();
  const queue = [root];
  for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
    if (out.has(name)) continue;
    const s = index.packages.get(name);
    if (!s) throw new BundleError(`${where} has no package ${name}`);
    out.set(name, s);
    for (const dep of `${s["Pre-Depends"] ?? ""},${s.Depends ?? ""}`
      .split(",")
      .map((d) => d.trim())
      .filter(Boolean)) {
      // "libc6 (>= 2.34)", "a | b", "python3:any": the package names, without versions or architecture qualifiers.
      const alternatives = dep.split("|").map((a) => a.trim().split(/[\s(:]/)[0]!);
      const pick = alternatives.find((a) => index.packages.has(a)) ?? alternatives.map((a) => index.provides.get(a)?.[0]).find(Boolean);
      if (!pick) throw new BundleError(`${name} depends on "${dep}", which no package of ${where} provides`);
      queue.push(pick);
    }
  }
  return [...out.values()];
}

// ---------------------------------------------------------------- the unpacked packages

/** `path` inside `root`, symlinks followed inside `root` too (Debian's are often absolute), or undefined. */
function resolveInRoot(root: string, path: string): string | undefined {
  const parts = path.split("/").filter(Boolean);
  let current = root;
  for (let hops = 0; parts.length > 0;) {
    const part = parts.shift()!;
    const next = part === ".." ? (current === root ? root : dirname(current)) : join(current, part);
    let st;
    try {
      st = lstatSync(next);
    } catch {
      return undefined;
    }
    if (st.isSymbolicLink()) {
      if (++hops > 40) return undefined;
      const target = readlinkSync(next);
      parts.unshift(...target.split("/").filter(Boolean));
      if (target.startsWith("/")) current = root;
      continue;
    }
    current = next;
  }
  return current;
}

/**
 * Rewrites libnode's paths of builtins (`\0/usr/share/nodejs/….js\0`) in a
 * copied file and returns them (relative to /usr/share/nodejs/).
 */
function pointBuiltinsAtFd(file: string): string[] {
  const buf = readFileSync(file);
  const prefix = Buffer.from(DEBIAN_BUILTINS_PREFIX, "latin1");
  const found: string[] = [];
  for (let at = buf.indexOf(prefix); at >= 0; at = buf.indexOf(prefix, at + prefix.length)) {
    const end = buf.indexOf(0, at);
    const path = buf.toString("latin1", at, end);
    // Only whole C strings naming a .js file; the same text inside process.config's JSON stays as it is.
    if (buf[at - 1] !== 0 || !/^\/usr\/share\/nodejs\/[!-~]+\.js$/.test(path)) continue;
    buf.write(BUNDLE_BUILTINS_PREFIX, at, "latin1");
    found.push(path.slice(DEBIAN_BUILTINS_PREFIX.length));
  }
  if (found.length > 0) writeFileSync(file, buf);
  return found;
}

/** Downloads (or finds cached) the packages and unpacks them into a fresh folder. */
async function unpackPackages(stanzas: Stanza[], o: DebianNodeOptions): Promise<{ root: string; downloadedBytes: number }> {
  let downloadedBytes = 0;
  const debs: string[] = [];
  for (const s of stanzas) {
    const deb = join(o.cacheDir, basename(s.Filename));
    if (!existsSync(deb) || sha256(deb) !== s.SHA256) {
      const url = `${o.mirror}/${s.Filename}`;
      downloadedBytes += await download(
        url,
        deb,
        `${s.Package} ${s.Version}`,
        `Check that this machine reaches ${new URL(o.mirror).host}, give another mirror with --mirror URL, or put the file at ${deb}`,
      );
      if (sha256(deb) !== s.SHA256) {
        rmSync(deb);
        throw new BundleError(
          `${url} does not have the SHA-256 of Debian's index (${s.SHA256}): the download is corrupt or the mirror inconsistent; try again`,
        );
      }
    }
    debs.push(deb);
  }
  const root = mkdtempSync(join(tmpdir(), "kfarm-debian-"));
  for (const deb of debs) run("dpkg-deb", ["-x", deb, root], `unpacking ${deb}`);
  return { root, downloadedBytes };
}

/** Stages Debian's node for `target` into `libDir` (the bundle's lib/). */
export async function stageDebianNode(target: DebianArch, libDir: string, o: DebianNodeOptions): Promise<DebianNode> {
  mkdirSync(o.cacheDir, { recursive: true });
  const where = `Debian ${DEBIAN_SUITE} (${target.arch})`;
  const { index, signed } = await packageIndex(target, o);
  const stanzas = dependencyClosure(index, "nodejs", where);
  const nodejs = stanzas[0]!;
  const nodeVersion = `v${nodejs.Version.replace(/^\d+:/, "").split(/[+~-]/)[0]}`;
  if (!nodeVersion.startsWith(`v${NODE_MAJOR}.`)) {
    throw new BundleError(
      `${where} now has nodejs ${nodejs.Version}, and kernelfarm runs on Node ${NODE_MAJOR}: ` +
        `change DEBIAN_SUITE in deploy/agent-bundle/debian.ts to a suite with Node ${NODE_MAJOR}, or test kernelfarm on the new major first`,
    );
  }
  const libc6 = index.packages.get("libc6");
  if (!libc6 || !stanzas.includes(libc6)) throw new BundleError(`nodejs of ${where} does not depend on libc6: the bundle would carry no glibc`);

  const { root, downloadedBytes } = await unpackPackages(stanzas, o);
  try {
    mkdirSync(join(libDir, BUILTINS_DIR), { recursive: true });
    let bytes = 0;
    let files = 0;
    const copy = (src: string, dst: string) => {
      mkdirSync(dirname(dst), { recursive: true });
      copyFileSync(src, dst);
      bytes += statSync(dst).size;
      files++;
    };
    const libDirs = [`usr/lib/${target.triplet}`, `lib/${target.triplet}`, "usr/lib", "lib"];
    const findLibrary = (soname: string) => libDirs.map((d) => resolveInRoot(root, `${d}/${soname}`)).find((p) => p && statSync(p).isFile());

    const nodeSrc = resolveInRoot(root, "usr/bin/node");
    if (!nodeSrc) throw new BundleError(`nodejs ${nodejs.Version} of ${where} has no usr/bin/node`);
    copy(nodeSrc, join(libDir, "node"));
    const nodeElf = readElf(join(libDir, "node"));
    if (nodeElf?.machine !== target.machine || !nodeElf.interpreter) {
      throw new BundleError(`usr/bin/node of ${where} is not a dynamically linked program for ${target.arch}`);
    }
    const loader = basename(nodeElf.interpreter);

    // The libraries node needs, transitively, and the loader; each under its soname, as a plain file.
    const libraries: string[] = [];
    const queue: Array<{ file: string; elf: ElfInfo }> = [{ file: "node", elf: nodeElf }];
    const wanted = (soname: string, by: string) => {
      if (libraries.includes(soname)) return;
      const src = findLibrary(soname);
      if (!src)
        throw new BundleError(`${soname}, which ${by} needs, is in none of the packages fetched from ${where} (${stanzas.map((s) => s.Package).join(", ")})`);
      copy(src, join(libDir, soname));
      libraries.push(soname);
      const elf = readElf(join(libDir, soname));
      if (elf?.machine !== target.machine) throw new BundleError(`${relative(root, src)} of ${where} is not a ${target.arch} library`);
      queue.push({ file: soname, elf });
    };
    wanted(loader, "node (its dynamic loader)");
    for (let next = queue.shift(); next; next = queue.shift()) for (const soname of next.elf.needed) wanted(soname, next.file);

    const builtins: string[] = [];
    for (const file of ["node", ...libraries]) {
      for (const rel of pointBuiltinsAtFd(join(libDir, file))) {
        const src = resolveInRoot(root, `${DEBIAN_BUILTINS_PREFIX}${rel}`);
        if (!src) throw new BundleError(`${file} reads ${DEBIAN_BUILTINS_PREFIX}${rel} as it starts, and no package fetched from ${where} has it`);
        copy(src, join(libDir, BUILTINS_DIR, rel));
        builtins.push(rel);
      }
    }
    return {
      debianVersion: nodejs.Version,
      nodeVersion,
      glibc: libc6.Version.split("-")[0]!,
      loader,
      signedIndex: signed,
      packages: Object.fromEntries(stanzas.map((s) => [s.Package, s.Version])),
      libraries,
      builtins,
      files,
      bytes,
      downloadedBytes,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
