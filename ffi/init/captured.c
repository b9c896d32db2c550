/* Transparent capture, the listening side (networks "proxy" and "public"): the stub resolver
 * and the capture listener, forked by the init like the proxy forwarder (after every
 * capability is dropped, before Landlock and seccomp, outside the command's Landlock domain).
 *
 * The capture listener accepts the connections capture.c redirects, asks the kernel where each
 * was going (SO_ORIGINAL_DST), turns the address back into the name the stub handed out for it,
 * and opens the same CONNECT to the policy proxy that an HTTP_PROXY client would send — so the
 * proxy decides exactly as it does for those (allowlist, its own resolution, address rules,
 * connection cap) and records its denials. On "200" the bytes are spliced both ways; anything
 * else (the proxy's 403 and its reason) is passed to the client, then the end; the client's
 * socket is closed only once the client stops sending (coop_relay's linger, forwarder.c). */
#include "init.h"

#include <linux/errno.h>
#include <linux/mman.h>
#include <linux/signal.h>

#define COOP_AF_INET 2
#define COOP_SOCK_STREAM 1
#define COOP_SOCK_DGRAM 2
#define COOP_SOCK_CLOEXEC 02000000
#define COOP_SOL_SOCKET 1
#define COOP_SO_REUSEADDR 2
#define COOP_SOL_IP 0
#define COOP_SO_ORIGINAL_DST 80

static struct coop_fake_names *shared_names;
static const char *proxy_auth;

static int send_all(long fd, const char *bytes, unsigned long len) {
  while (len > 0) {
    long n = SYS6(__NR_sendto, fd, bytes, len, 0x4000 /* MSG_NOSIGNAL */, 0, 0);
    if (n == -EINTR) continue;
    if (n <= 0) return -1;
    bytes += n, len -= (unsigned long)n;
  }
  return 0;
}

long coop_proxy_send(const char *request) {
  long up = coop_proxy_connect();
  if (up >= 0 && send_all(up, request, coop_strlen(request)) < 0) {
    SYS1(__NR_close, up);
    return -EPIPE;
  }
  return up;
}

/* The proxy's answer to a CONNECT, when it lets the connection through. */
#define CONNECT_OK "HTTP/1.1 200 Connection established\r\n\r\n"

int coop_proxy_read_head(long up, char *head, unsigned long cap) {
  /* Never past the head: whatever follows it (a server that speaks first) stays in the socket
   * for the relay. Every head the proxy sends is at least as long as CONNECT_OK, so that much
   * is read at once, then a byte at a time. */
  unsigned long len = 0, want = sizeof CONNECT_OK - 1;
  while (len + 1 < cap) {
    long n = SYS3(__NR_read, up, head + len, len < want ? want - len : 1);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    len += (unsigned long)n;
    if (len >= 4 && coop_strneq(head + len - 4, "\r\n\r\n", 4)) {
      head[len] = 0;
      return 0;
    }
  }
  head[len] = 0;
  return -EPROTO;
}

static void ip_to_str(const unsigned char ip[4], char *out) {
  unsigned long len = 0;
  for (int i = 0; i < 4; i++) {
    char part[4];
    coop_ulong_to_str(ip[i], part);
    if (i) coop_append(out, &len, 16, ".");
    coop_append(out, &len, 16, part);
  }
}

/* One redirected connection: ask the proxy for its original destination. */
static void serve_captured(int client, void *context) {
  (void)context;
  struct coop_sockaddr_in dst = {0};
  int size = sizeof dst;
  if (SYS5(__NR_getsockopt, client, COOP_SOL_IP, COOP_SO_ORIGINAL_DST, &dst, &size) < 0) return;
  /* A connection made to this listener directly (not redirected) names it: nothing to ask. */
  unsigned dst_port = (unsigned)dst.port[0] << 8 | dst.port[1];
  if (dst.addr[0] == 127 && dst.addr[1] == 0 && dst.addr[2] == 0 && dst.addr[3] == 1 &&
      dst_port == COOP_CAPTURE_PORT)
    return;
  char host[COOP_NAME_MAX] = {0};
  unsigned index = ((unsigned)dst.addr[2] << 8 | dst.addr[3]) - 1;
  if (dst.addr[0] == COOP_FAKE_NET_A && dst.addr[1] == COOP_FAKE_NET_B &&
      index < COOP_FAKE_NAMES)
    memcpy(host, shared_names->names[index], COOP_NAME_MAX - 1);
  /* An address the stub never handed out goes to the proxy as what it is: an IP literal,
   * which the policy refuses unless the owner allowed exactly it (198.18/15 never is). */
  if (!host[0]) ip_to_str(dst.addr, host);
  char port[8];
  coop_ulong_to_str(dst_port, port);

  char request[COOP_NAME_MAX * 2 + 512];
  unsigned long len = 0;
  const char *parts[] = {"CONNECT ", host, ":", port, " HTTP/1.1\r\nHost: ", host, ":", port,
                         "\r\nProxy-Authorization: ", proxy_auth, "\r\n\r\n"};
  for (unsigned i = 0; i < sizeof parts / sizeof parts[0]; i++)
    coop_append(request, &len, sizeof request, parts[i]);
  long up = coop_proxy_send(request);
  if (up < 0) return; /* the client sees the connection close */
  /* The client's first bytes go to the proxy at once, behind the CONNECT: the relay keeps
   * them and sends them upstream only after the policy allowed and the dial succeeded. */
  long pid = SYS5(__NR_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) return;
  if (pid == 0) coop_relay((int)client, (int)up, 1);
  char head[4096];
  int complete = coop_proxy_read_head(up, head, sizeof head) == 0;
  /* A refusal is passed on: an HTTP client shows the reason; any client sees the end. */
  if ((!complete || !coop_streq(head, CONNECT_OK)) &&
      send_all(client, head, coop_strlen(head)) < 0)
    return;
  coop_relay((int)up, client, 0);
}

void coop_open_capture(struct coop_capture *capture) {
  const int step = COOP_STEP_CAPTURE;
  long fd =
      coop_check(step, SYS3(__NR_socket, COOP_AF_INET, COOP_SOCK_STREAM | COOP_SOCK_CLOEXEC, 0));
  int one = 1;
  coop_check(step, SYS5(__NR_setsockopt, fd, COOP_SOL_SOCKET, COOP_SO_REUSEADDR, &one, sizeof one));
  struct coop_sockaddr_in addr = {.family = COOP_AF_INET,
                                  .port = {COOP_CAPTURE_PORT >> 8, COOP_CAPTURE_PORT & 0xff},
                                  .addr = {127, 0, 0, 1}};
  coop_check(step, SYS3(__NR_bind, fd, &addr, sizeof addr));
  coop_check(step, SYS2(__NR_listen, fd, 128));
  capture->listener = (int)fd;
  /* Port 53 needs CAP_NET_BIND_SERVICE: bound now, while the init still has it. */
  fd = coop_check(step, SYS3(__NR_socket, COOP_AF_INET, COOP_SOCK_DGRAM | COOP_SOCK_CLOEXEC, 0));
  struct coop_sockaddr_in dns = {.family = COOP_AF_INET, .port = {0, 53}, .addr = {127, 0, 0, 1}};
  coop_check(step, SYS3(__NR_bind, fd, &dns, sizeof dns));
  capture->dns = (int)fd;
}

/* Forks a helper that keeps only `keep` of the capture sockets. */
static long fork_helper(const struct coop_capture *capture, int keep) {
  long pid = coop_check(COOP_STEP_CAPTURE, SYS5(__NR_clone, SIGCHLD, 0, 0, 0, 0));
  if (pid == 0) {
    /* Nothing of the command's stdio or the gateway's report pipe stays open here. */
    SYS1(__NR_close, 0), SYS1(__NR_close, 1), SYS1(__NR_close, 2);
    SYS1(__NR_close, COOP_FD_REPORT);
    SYS1(__NR_close, keep == capture->dns ? capture->listener : capture->dns);
  }
  return pid;
}

void coop_start_capture(struct coop_capture *capture, const struct coop_spec *spec) {
  const int step = COOP_STEP_CAPTURE;
  proxy_auth = spec->proxy_auth;
  long table = coop_check(step, SYS6(__NR_mmap, 0, sizeof *shared_names, PROT_READ | PROT_WRITE,
                                     MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  shared_names = (struct coop_fake_names *)table;
  if (fork_helper(capture, capture->dns) == 0)
    coop_dns_stub(capture->dns, proxy_auth, shared_names);
  if (fork_helper(capture, capture->listener) == 0)
    coop_accept_forever(capture->listener, serve_captured, 0);
  /* The command inherits neither the sockets nor the table. */
  SYS1(__NR_close, capture->listener), SYS1(__NR_close, capture->dns);
  SYS2(__NR_munmap, shared_names, sizeof *shared_names);
  shared_names = 0;
}
