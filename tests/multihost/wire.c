/*
 * wire: the multi-host test bed's network. One switch joins the bed's hosts
 * (network namespaces) through a TUN device each, and applies per link what a
 * real network does: delay, jitter, loss, a rate limit, cuts, and one-way
 * blocks between two hosts. Every host keeps its own kernel TCP stack; only
 * the wire between them is emulated, in userspace, because the kernels this
 * runs on (CI's included) are built without netem (CONFIG_NET_SCH_NETEM).
 *
 * A packet from host A to host B passes A's uplink (A -> switch) and then
 * B's downlink (switch -> B); each direction of a link drops with its loss
 * probability, queues behind its rate (tail drop past MAX_QUEUE_US of
 * backlog), then waits its delay plus a uniform jitter, never overtaking the
 * packet before it on that direction (so jitter does not reorder: a TCP
 * stream sees delay variation, not reordering).
 *
 * Control: one command per line on stdin, one reply line on stdout
 * ("ok ..." or "error ..."). The wire exits when stdin closes, so it never
 * outlives the test that started it.
 *   port NAME IPV4 IFNAME    make TUN device IFNAME for host NAME at IPV4
 *   link NAME [up|down] [dir=both|up|down] [delay=MS] [jitter=MS] [loss=PCT] [rate=MBIT]
 *   block SRC DST | unblock SRC DST     drop every packet from SRC to DST
 *   stats NAME               packets and bytes forwarded from and dropped on NAME's link
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_PORTS 16
#define MAX_PACKET 65536
/* A direction with more than this much queued behind its rate drops new packets (tail drop). */
#define MAX_QUEUE_US 200000

typedef struct {
  int64_t delay_us, jitter_us, rate_bps; /* rate 0: unlimited */
  double loss;
  int64_t busy_until, last_out;
} direction_t;

typedef struct {
  char name[32];
  uint32_t ip; /* network order */
  int fd;
  int up;
  direction_t uplink, downlink;
  uint64_t sent_packets, sent_bytes, dropped;
} port_t;

typedef struct {
  int64_t due;
  uint64_t seq;
  int src, dst;
  int len;
  unsigned char *data;
} packet_t;

static port_t ports[MAX_PORTS];
static int nports;
static int blocked[MAX_PORTS][MAX_PORTS];
static packet_t *heap;
static size_t heap_len, heap_cap;
static uint64_t next_seq;

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int earlier(const packet_t *a, const packet_t *b) {
  return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_push(packet_t p) {
  if (heap_len == heap_cap) {
    heap_cap = heap_cap ? heap_cap * 2 : 4096;
    heap = realloc(heap, heap_cap * sizeof *heap);
    if (!heap) { perror("wire: realloc"); exit(1); }
  }
  size_t i = heap_len++;
  heap[i] = p;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!earlier(&heap[i], &heap[parent])) break;
    packet_t t = heap[i]; heap[i] = heap[parent]; heap[parent] = t;
    i = parent;
  }
}

static packet_t heap_pop(void) {
  packet_t top = heap[0];
  heap[0] = heap[--heap_len];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < heap_len && earlier(&heap[l], &heap[m])) m = l;
    if (r < heap_len && earlier(&heap[r], &heap[m])) m = r;
    if (m == i) break;
    packet_t t = heap[i]; heap[i] = heap[m]; heap[m] = t;
    i = m;
  }
  return top;
}

static int find_port(const char *name) {
  for (int i = 0; i < nports; i++) if (strcmp(ports[i].name, name) == 0) return i;
  return -1;
}

static int port_of_ip(uint32_t ip) {
  for (int i = 0; i < nports; i++) if (ports[i].ip == ip) return i;
  return -1;
}

/* When a packet that reaches direction d at time t leaves it, or -1 if d drops it. */
static int64_t pass(direction_t *d, int64_t t, int len) {
  if (d->loss > 0 && drand48() < d->loss) return -1;
  if (d->rate_bps > 0) {
    int64_t start = d->busy_until > t ? d->busy_until : t;
    if (start - t > MAX_QUEUE_US) return -1;
    d->busy_until = start + (int64_t)len * 8 * 1000000 / d->rate_bps;
    t = d->busy_until;
  }
  int64_t out = t + d->delay_us;
  if (d->jitter_us > 0) out += (int64_t)((drand48() * 2 - 1) * (double)d->jitter_us);
  if (out < t) out = t;
  if (out < d->last_out) out = d->last_out;
  d->last_out = out;
  return out;
}

static void forward_from(int src) {
  static unsigned char buf[MAX_PACKET];
  for (;;) {
    ssize_t n = read(ports[src].fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      perror("wire: read");
      exit(1);
    }
    /* IPv4 only: the bed's addresses are IPv4, and IPv6 is off on its links. */
    if (n < 20 || (buf[0] >> 4) != 4) continue;
    uint32_t dst_ip;
    memcpy(&dst_ip, buf + 16, 4);
    int dst = port_of_ip(dst_ip);
    port_t *s = &ports[src];
    if (dst < 0 || !s->up || !ports[dst].up || blocked[src][dst]) { s->dropped++; continue; }
    int64_t t = pass(&s->uplink, now_us(), (int)n);
    if (t >= 0) t = pass(&ports[dst].downlink, t, (int)n);
    if (t < 0) { s->dropped++; continue; }
    packet_t p = { .due = t, .seq = next_seq++, .src = src, .dst = dst, .len = (int)n, .data = malloc((size_t)n) };
    if (!p.data) { perror("wire: malloc"); exit(1); }
    memcpy(p.data, buf, (size_t)n);
    heap_push(p);
  }
}

static void deliver_due(void) {
  int64_t now = now_us();
  while (heap_len > 0 && heap[0].due <= now) {
    packet_t p = heap_pop();
    port_t *s = &ports[p.src], *d = &ports[p.dst];
    /* A link cut while the packet was on it loses the packet, as a pulled cable does. */
    if (s->up && d->up && !blocked[p.src][p.dst] && write(d->fd, p.data, (size_t)p.len) == p.len) {
      s->sent_packets++;
      s->sent_bytes += (uint64_t)p.len;
    } else {
      s->dropped++;
    }
    free(p.data);
  }
}

static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void reply(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout);
}

static void cmd_port(char *args) {
  char name[32], ip[32], ifname[IFNAMSIZ];
  if (sscanf(args, "%31s %31s %15s", name, ip, ifname) != 3) return reply("error usage: port NAME IPV4 IFNAME");
  if (nports == MAX_PORTS) return reply("error at most %d ports", MAX_PORTS);
  if (find_port(name) >= 0) return reply("error port %s exists", name);
  port_t *p = &ports[nports];
  memset(p, 0, sizeof *p);
  if (inet_pton(AF_INET, ip, &p->ip) != 1) return reply("error bad IPv4 address %s", ip);
  p->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (p->fd < 0) return reply("error cannot open /dev/net/tun: %s", strerror(errno));
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  memcpy(ifr.ifr_name, ifname, strlen(ifname) + 1);
  if (ioctl(p->fd, TUNSETIFF, &ifr) < 0) {
    int e = errno;
    close(p->fd);
    return reply("error TUNSETIFF %s: %s", ifname, strerror(e));
  }
  snprintf(p->name, sizeof p->name, "%s", name);
  p->up = 1;
  nports++;
  reply("ok %s", ifr.ifr_name);
}

static int set_direction(direction_t *d, const char *key, double v) {
  if (strcmp(key, "delay") == 0) d->delay_us = (int64_t)(v * 1000);
  else if (strcmp(key, "jitter") == 0) d->jitter_us = (int64_t)(v * 1000);
  else if (strcmp(key, "loss") == 0) d->loss = v / 100;
  else if (strcmp(key, "rate") == 0) d->rate_bps = (int64_t)(v * 1e6);
  else return -1;
  return 0;
}

static void cmd_link(char *args) {
  char *save, *tok = strtok_r(args, " ", &save);
  int i = tok ? find_port(tok) : -1;
  if (i < 0) return reply("error usage: link NAME [up|down] [dir=both|up|down] [delay=MS] [jitter=MS] [loss=PCT] [rate=MBIT]; no port %s", tok ? tok : "");
  port_t *p = &ports[i];
  int dirs = 3; /* 1: uplink, 2: downlink */
  while ((tok = strtok_r(NULL, " ", &save))) {
    if (strcmp(tok, "up") == 0) { p->up = 1; continue; }
    if (strcmp(tok, "down") == 0) { p->up = 0; continue; }
    char *eq = strchr(tok, '=');
    if (!eq) return reply("error bad setting %s", tok);
    *eq = 0;
    if (strcmp(tok, "dir") == 0) {
      dirs = strcmp(eq + 1, "up") == 0 ? 1 : strcmp(eq + 1, "down") == 0 ? 2 : strcmp(eq + 1, "both") == 0 ? 3 : 0;
      if (!dirs) return reply("error dir must be both, up or down, got %s", eq + 1);
      continue;
    }
    char *end;
    double v = strtod(eq + 1, &end);
    if (*end || v < 0) return reply("error %s needs a non-negative number, got %s", tok, eq + 1);
    if ((dirs & 1) && set_direction(&p->uplink, tok, v) < 0) return reply("error unknown setting %s", tok);
    if ((dirs & 2) && set_direction(&p->downlink, tok, v) < 0) return reply("error unknown setting %s", tok);
  }
  reply("ok");
}

static void cmd_block(char *args, int on) {
  char a[32], b[32];
  if (sscanf(args, "%31s %31s", a, b) != 2) return reply("error usage: block|unblock SRC DST");
  int i = find_port(a), j = find_port(b);
  if (i < 0 || j < 0) return reply("error no port %s", i < 0 ? a : b);
  blocked[i][j] = on;
  reply("ok");
}

static void cmd_stats(char *args) {
  char name[32];
  int i = sscanf(args, "%31s", name) == 1 ? find_port(name) : -1;
  if (i < 0) return reply("error usage: stats NAME");
  reply("ok sent_packets=%llu sent_bytes=%llu dropped=%llu", (unsigned long long)ports[i].sent_packets,
        (unsigned long long)ports[i].sent_bytes, (unsigned long long)ports[i].dropped);
}

static void control(void) {
  static char line[1024];
  static size_t used;
  ssize_t n = read(0, line + used, sizeof line - 1 - used);
  if (n <= 0) exit(0);
  used += (size_t)n;
  char *nl;
  while ((nl = memchr(line, '\n', used))) {
    *nl = 0;
    char *cmd = line, *args = strchr(line, ' ');
    if (args) *args++ = 0; else args = cmd + strlen(cmd);
    if (strcmp(cmd, "port") == 0) cmd_port(args);
    else if (strcmp(cmd, "link") == 0) cmd_link(args);
    else if (strcmp(cmd, "block") == 0) cmd_block(args, 1);
    else if (strcmp(cmd, "unblock") == 0) cmd_block(args, 0);
    else if (strcmp(cmd, "stats") == 0) cmd_stats(args);
    else reply("error unknown command %s", cmd);
    size_t rest = used - (size_t)(nl + 1 - line);
    memmove(line, nl + 1, rest);
    used = rest;
  }
  if (used == sizeof line - 1) { reply("error line too long"); used = 0; }
}

int main(void) {
  srand48((long)now_us());
  struct pollfd fds[MAX_PORTS + 1];
  for (;;) {
    fds[0] = (struct pollfd){ .fd = 0, .events = POLLIN };
    for (int i = 0; i < nports; i++) fds[i + 1] = (struct pollfd){ .fd = ports[i].fd, .events = POLLIN };
    struct timespec wait, *timeout = NULL;
    if (heap_len > 0) {
      int64_t left = heap[0].due - now_us();
      if (left < 0) left = 0;
      wait = (struct timespec){ .tv_sec = left / 1000000, .tv_nsec = (left % 1000000) * 1000 };
      timeout = &wait;
    }
    if (ppoll(fds, (nfds_t)nports + 1, timeout, NULL) < 0 && errno != EINTR) { perror("wire: ppoll"); return 1; }
    if (fds[0].revents) control();
    for (int i = 0; i < nports; i++) if (fds[i + 1].revents & POLLIN) forward_from(i);
    deliver_due();
  }
}
