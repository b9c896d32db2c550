/* Network "proxy": the only way out of the sandbox's empty network namespace.
 *
 * The init listens on 127.0.0.1:COOP_PROXY_PORT and forks this forwarder, which accepts
 * connections and relays each one, byte for byte, to the gateway's policy proxy through the
 * unix socket bound at COOP_PROXY_SOCKET. It parses nothing: the proxy on the host side decides
 * everything (token, allowlist, addresses). Runs without capabilities and non-dumpable (it is
 * forked after coop_drop_privileges), outside the command's Landlock domain — which is why the
 * command can neither signal nor ptrace it — and dies with the pid namespace.
 *
 * Each connection gets two processes, one per direction, each a blocking splice loop: no
 * buffering logic, and no deadlock when both peers write at once. */
#include "init.h"

#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/signal.h>

#define COOP_AF_UNIX 1
#define COOP_AF_INET 2
#define COOP_SOCK_STREAM 1
#define COOP_SOCK_CLOEXEC 02000000
#define COOP_SOL_SOCKET 1
#define COOP_SO_REUSEADDR 2
#define COOP_SHUT_WR 1
#define COOP_SPLICE_F_MOVE 1
#define COOP_F_SETPIPE_SZ 1031
#define COOP_PIPE_SIZE (1 << 20)
#define COOP_SA_NOCLDWAIT 2
#define COOP_CLONE_PIDFD 0x1000
#define COOP_POLLIN 1

struct coop_pollfd {
  int fd;
  short events, revents;
};

/* sockaddr_un as the kernel lays it out. */
struct coop_sockaddr_un {
  unsigned short family;
  char path[108];
};

struct coop_sigaction {
  void *handler;
  unsigned long flags;
  void *restorer;
  unsigned long mask;
};

/* How long, and how much, a client may go on sending once the policy proxy has closed its end
 * (see linger()). Time for a client to read the answer waiting for it and close; too short to
 * hold a process worth counting. */
#define COOP_LINGER_MS 2000
#define COOP_LINGER_BYTES (1L << 20)
#define COOP_CLOCK_MONOTONIC 1
#define COOP_MSG_DONTWAIT 0x40

struct coop_timespec {
  long sec, nsec;
};

static long now_ms(void) {
  struct coop_timespec now = {0, 0};
  SYS2(__NR_clock_gettime, COOP_CLOCK_MONOTONIC, &now);
  return now.sec * 1000 + now.nsec / 1000000;
}

/* The proxy's end is gone (it refused and closed, or the connection ended), but the client may
 * still be sending: read and discard what it sends until it closes, for at most COOP_LINGER_MS
 * and COOP_LINGER_BYTES, then exit. Exiting at once would close the client's TCP socket while
 * bytes are still coming: the kernel answers those with RST (RFC 1122 4.2.2.13), and a client
 * that already has the proxy's FIN (CLOSE_WAIT) then gets EPIPE from its next write — bash's
 * /dev/tcp died of SIGPIPE before reading the 403 waiting in its buffer. The other direction's
 * process still sends the rest of the answer and the FIN; this one only keeps reading. */
__attribute__((noreturn)) static void linger(int client) {
  char sink[4096];
  long deadline = now_ms() + COOP_LINGER_MS, drained = 0;
  for (;;) {
    long left = deadline - now_ms();
    if (left <= 0 || drained >= COOP_LINGER_BYTES) break;
    struct coop_pollfd wait = {client, COOP_POLLIN, 0};
    struct coop_timespec timeout = {left / 1000, left % 1000 * 1000000};
    long n = SYS5(__NR_ppoll, &wait, 1, &timeout, 0, 8);
    if (n == -EINTR || n == 0) continue;
    if (n < 0) break;
    n = SYS6(__NR_recvfrom, client, sink, sizeof sink, COOP_MSG_DONTWAIT, 0, 0);
    if (n == -EINTR || n == -EAGAIN) continue;
    if (n <= 0) break; /* the client closed (or reset): nothing left to protect */
    drained += n;
  }
  coop_exit(0);
}

/* Moves from -> to until EOF or an error, then half-closes `to` so the peer sees EOF too.
 * splice through a pipe: the bytes never enter this process. When `from` is the client's TCP
 * socket and `to` fails, it lingers on `from` (see linger()) instead of exiting at once. */
__attribute__((noreturn)) void coop_relay(int from, int to, int from_is_client) {
  int pipe[2];
  if (SYS2(__NR_pipe2, pipe, O_CLOEXEC) < 0) coop_exit(1);
  SYS3(__NR_fcntl, pipe[1], COOP_F_SETPIPE_SZ, COOP_PIPE_SIZE); /* best effort */
  for (;;) {
    long n = SYS6(__NR_splice, from, 0, pipe[1], 0, COOP_PIPE_SIZE, COOP_SPLICE_F_MOVE);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    while (n > 0) {
      long w = SYS6(__NR_splice, pipe[0], 0, to, 0, n, COOP_SPLICE_F_MOVE);
      if (w == -EINTR) continue;
      /* The peer is gone (EPIPE: SIGPIPE is blocked here); what is in the pipe is dropped. */
      if (w <= 0) {
        if (from_is_client) linger(from);
        coop_exit(0);
      }
      n -= w;
    }
  }
  SYS2(__NR_shutdown, to, COOP_SHUT_WR);
  coop_exit(0);
}

long coop_proxy_connect(void) {
  long up = SYS3(__NR_socket, COOP_AF_UNIX, COOP_SOCK_STREAM | COOP_SOCK_CLOEXEC, 0);
  if (up < 0) return up;
  struct coop_sockaddr_un addr = {.family = COOP_AF_UNIX};
  memcpy(addr.path, COOP_PROXY_SOCKET, sizeof COOP_PROXY_SOCKET);
  long r;
  do r = SYS3(__NR_connect, up, &addr, sizeof addr);
  while (r == -EINTR);
  if (r < 0) {
    SYS1(__NR_close, up);
    return r;
  }
  return up;
}

/* One accepted connection: dial the proxy's socket and relay both ways. */
__attribute__((noreturn)) static void serve(int client) {
  long up = coop_proxy_connect();
  if (up < 0) coop_exit(1); /* the client sees the connection close */
  long pid = SYS5(__NR_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) coop_exit(1);
  if (pid == 0) coop_relay((int)up, client, 0);
  coop_relay(client, (int)up, 1);
}

/* Accepts `listener`'s first connection itself and forks a process to serve it. From then on
 * one spare process waits in accept() for the next connection, forked while the previous one
 * was being served, so a connection's setup no longer waits for a fork (~0.1 ms, more on a busy
 * host). A sandbox that never connects pays for no spare. The spare tells the listener on
 * `ready` once it has a client, and the listener forks the next spare; it also watches the
 * spare's pidfd, so a spare that dies without a client (the OOM killer) is replaced instead of
 * leaving the port unserved. When no process can be made (pidsLimit), the listener accepts the
 * next connection itself and closes it, as before. */
__attribute__((noreturn)) void coop_accept_forever(int listener,
                                                   void (*serve_one)(int client, void *context),
                                                   void *context) {
  /* Children are reaped by the kernel: this process never waits for them. */
  struct coop_sigaction ign = {(void *)1 /* SIG_IGN */, COOP_SA_NOCLDWAIT, 0, 0};
  SYS4(__NR_rt_sigaction, SIGCHLD, &ign, 0, 8);
  int ready[2];
  if (SYS2(__NR_pipe2, ready, O_CLOEXEC) < 0) coop_exit(1);
  int spares = 0; /* set once the first connection was served */
  for (;;) {
    int pidfd = -1;
    long client = -1;
    if (!spares) {
      client = SYS4(__NR_accept4, listener, 0, 0, COOP_SOCK_CLOEXEC);
      if (client < 0) continue; /* EINTR, ECONNABORTED, EMFILE: keep serving */
    }
    long pid = SYS5(__NR_clone, SIGCHLD | COOP_CLONE_PIDFD, 0, &pidfd, 0, 0);
    /* Before 5.2 there is no CLONE_PIDFD: the spare is then not watched (poll skips fd -1). */
    if (pid == -EINVAL) pid = SYS5(__NR_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
      SYS1(__NR_close, ready[0]);
      while (client < 0) client = SYS4(__NR_accept4, listener, 0, 0, COOP_SOCK_CLOEXEC);
      char one = 1;
      if (spares) SYS3(__NR_write, ready[1], &one, 1);
      SYS1(__NR_close, ready[1]);
      SYS1(__NR_close, listener);
      serve_one((int)client, context);
      coop_exit(0);
    }
    if (pid < 0 && client < 0) client = SYS4(__NR_accept4, listener, 0, 0, COOP_SOCK_CLOEXEC);
    if (client >= 0) SYS1(__NR_close, client); /* served by the child, or closed: no process */
    if (pid > 0 && spares) {
      /* Until the spare has a client, or is gone without one. */
      struct coop_pollfd waits[2] = {{ready[0], COOP_POLLIN, 0}, {pidfd, COOP_POLLIN, 0}};
      for (;;) {
        long n = SYS5(__NR_ppoll, waits, 2, 0, 0, 8);
        if (n < 0 && n != -EINTR) break;
        if (n <= 0) continue;
        if (waits[0].revents) {
          char byte;
          SYS3(__NR_read, ready[0], &byte, 1);
          break;
        }
        if (waits[1].revents) break;
      }
    }
    if (pid > 0) spares = 1;
    if (pidfd >= 0) SYS1(__NR_close, pidfd);
  }
}

static void serve_proxy_client(int client, void *context) {
  (void)context;
  serve(client);
}

void coop_start_proxy_forwarder(void) {
  const int step = COOP_STEP_PROXY_FORWARDER;
  long fd =
      coop_check(step, SYS3(__NR_socket, COOP_AF_INET, COOP_SOCK_STREAM | COOP_SOCK_CLOEXEC, 0));
  int one = 1;
  coop_check(step, SYS5(__NR_setsockopt, fd, COOP_SOL_SOCKET, COOP_SO_REUSEADDR, &one, sizeof one));
  struct coop_sockaddr_in addr = {.family = COOP_AF_INET,
                                  .port = {COOP_PROXY_PORT >> 8, COOP_PROXY_PORT & 0xff},
                                  .addr = {127, 0, 0, 1}};
  coop_check(step, SYS3(__NR_bind, fd, &addr, sizeof addr));
  coop_check(step, SYS2(__NR_listen, fd, 128));
  long pid = coop_check(step, SYS5(__NR_clone, SIGCHLD, 0, 0, 0, 0));
  if (pid == 0) {
    /* Nothing of the command's stdio or the gateway's report pipe stays open here. */
    SYS1(__NR_close, 0), SYS1(__NR_close, 1), SYS1(__NR_close, 2);
    SYS1(__NR_close, COOP_FD_REPORT);
    coop_accept_forever((int)fd, serve_proxy_client, 0);
    coop_exit(0);
  }
  SYS1(__NR_close, fd); /* the command never inherits the listener */
}
