/* The policy proxy's byte mover: the gateway side of network "proxy" without a JavaScript copy
 * loop. It accepts the forwarder's connections on the proxy's unix socket, reads each request
 * head, and hands the head to TypeScript, which decides everything (token, allowlist, its own
 * resolution, address checks) exactly as before. TypeScript then answers with one command per
 * connection: "reply these bytes and close" (400, 403, 407, 502) or "dial this checked address,
 * send these prefixes, relay". Only then does this file connect — to the numeric address
 * TypeScript checked, never a name — and splice both directions through pipes, so the bytes of
 * a download never enter the process's memory.
 *
 * Threads of our own, not Deno's blocking pool (DESIGN.md §4: long nonblocking FFI calls starve
 * it): one acceptor per proxy and one per connection, each with signals blocked. They report on
 * a pipe that TypeScript reads with node:net (epoll, no thread) as fixed 12-byte events; every
 * FFI call from TypeScript returns at once. Every wait is a poll() that includes the proxy's
 * stop eventfd, so coop_relay_stop ends the acceptor and every connection promptly; the owner
 * then joins each thread (coop_relay_release, coop_relay_free) so none outlives the proxy.
 *
 * A sandbox could open thousands of connections and hold each one open (ATTACKS R11): at most
 * max_open connections have a thread at once; the acceptor answers each one past that with the
 * refusal TypeScript gave it (a 503) and closes it at once, so threads and fds stay bounded. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (64 * 1024) /* MAX_HEAD_BYTES in src/sandbox/proxy/http_head.ts */
#define HEAD_BUF (HEAD_MAX + 16 * 1024)
#define HEAD_TIMEOUT_MS 30000
#define CONNECT_TIMEOUT_MS 10000
#define PIPE_SIZE (1 << 20) /* the unprivileged maximum; best effort */
#define THREAD_STACK (128 * 1024)

/* Events (struct relay_event.kind); keep in sync with src/sandbox/proxy/native_relay.ts. */
enum { EV_HEAD = 1, EV_DIALED = 2, EV_DONE = 3, EV_ACCEPTOR_EXIT = 4, EV_REFUSED = 5 };
/* Commands from TypeScript (struct conn.command). */
enum { CMD_NONE = 0, CMD_REPLY = 1, CMD_DIAL = 2 };

struct relay_event {
  uint32_t id;
  uint32_t kind;
  int32_t value; /* EV_DIALED: 0 or -errno; EV_REFUSED: connections refused so far */
};

struct conn {
  struct conn *next;
  struct relay *relay;
  uint32_t id;
  pthread_t thread;
  int client, upstream;
  int command; /* guarded by relay->lock */
  /* guarded by relay->lock: 0 until answered, then 1; back to 0 only after a failed dial, whose
   * only answer left is the 502 reply. A second answer would free buffers serve() still reads. */
  int answered;
  unsigned char *to_client, *to_upstream;
  long to_client_len, to_upstream_len;
  struct sockaddr_storage address;
  socklen_t address_len;
  long head_len, rest_len; /* head ends with the blank line; rest follows it in buf */
  unsigned char buf[HEAD_BUF];
};

struct relay {
  int listener, stop, events;
  /* Written by coop_relay_drain: the sandbox is gone, so whatever it sent is already here. */
  int drain;
  int draining; /* set before `drain` is written; read without the lock */
  pthread_t acceptor;
  pthread_mutex_t lock;
  pthread_cond_t changed; /* a command arrived, or stop */
  int stopping;
  uint32_t next_id;
  struct conn *conns;
  int max_open, open;  /* connections with a thread (started, not yet released); lock */
  int32_t refused;     /* connections refused past max_open (acceptor only) */
  unsigned char *refusal;
  long refusal_len;
};

static void post(struct relay *r, uint32_t id, uint32_t kind, int32_t value) {
  struct relay_event ev = {id, kind, value};
  /* 12 bytes < PIPE_BUF: atomic. Blocks only while TypeScript is behind, and it always drains. */
  while (write(r->events, &ev, sizeof ev) < 0 && errno == EINTR) {
  }
}

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Waits until fd has `events` or the proxy stops (or, with `or_drain`, drains). 1: ready,
 * 0: timed out, -1: stopping or draining. */
static int wait_for(struct relay *r, int fd, short events, int timeout_ms, int or_drain) {
  for (;;) {
    struct pollfd p[3] = {{fd, events, 0}, {r->stop, POLLIN, 0}, {r->drain, POLLIN, 0}};
    int n = poll(p, or_drain ? 3 : 2, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (p[1].revents || (or_drain && p[2].revents)) return -1;
    return n > 0 ? 1 : 0;
  }
}

static int draining(struct relay *r) {
  return __atomic_load_n(&r->draining, __ATOMIC_ACQUIRE);
}

/* Sends all of bytes on nonblocking socket fd. 0, or -1 when the peer is gone or we stop. */
static int send_all(struct relay *r, int fd, const unsigned char *bytes, long len) {
  while (len > 0) {
    ssize_t n = send(fd, bytes, len, MSG_NOSIGNAL);
    if (n > 0) {
      bytes += n, len -= n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (wait_for(r, fd, POLLOUT, -1, 0) < 0) return -1;
      continue;
    }
    return -1;
  }
  return 0;
}

/* Reads until the blank line that ends the head, within HEAD_TIMEOUT_MS. 0 or -1. Once the
 * relay drains it no longer waits: the sandbox is gone, so what it sent is all there. */
static int read_head(struct conn *c) {
  long deadline = now_ms() + HEAD_TIMEOUT_MS, len = 0;
  for (;;) {
    ssize_t n = recv(c->client, c->buf + len, HEAD_BUF - len, 0);
    if (n == 0) return -1;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (draining(c->relay)) return -1;
      long left = deadline - now_ms();
      if (left <= 0) return -1;
      int ready = wait_for(c->relay, c->client, POLLIN, (int)left, 1);
      if (ready == 0 || (ready < 0 && __atomic_load_n(&c->relay->stopping, __ATOMIC_RELAXED)))
        return -1;
      continue; /* readable, or draining: read what is there once more */
    }
    if (n < 0) return -1;
    long from = len > 3 ? len - 3 : 0;
    len += n;
    unsigned char *end = memmem(c->buf + from, len - from, "\r\n\r\n", 4);
    if (end) {
      c->head_len = end + 4 - c->buf;
      c->rest_len = len - c->head_len;
      return 0;
    }
    if (len > HEAD_MAX) return -1;
  }
}

/* Waits for TypeScript's command; CMD_NONE when the proxy stops. */
static int next_command(struct conn *c) {
  struct relay *r = c->relay;
  pthread_mutex_lock(&r->lock);
  while (c->command == CMD_NONE && !r->stopping) pthread_cond_wait(&r->changed, &r->lock);
  int command = r->stopping ? CMD_NONE : c->command;
  c->command = CMD_NONE; /* taken; `answered` stays set */
  pthread_mutex_unlock(&r->lock);
  return command;
}

/* A nonblocking connect to the checked address within CONNECT_TIMEOUT_MS: 0 or -errno. */
static int dial(struct conn *c) {
  int fd = socket(c->address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (connect(fd, (struct sockaddr *)&c->address, c->address_len) < 0) {
    if (errno != EINPROGRESS) {
      int e = errno;
      close(fd);
      return -e;
    }
    /* Draining: the sandbox that asked is gone; connecting for it would be a side effect. */
    int ready = draining(c->relay) ? -1 : wait_for(c->relay, fd, POLLOUT, CONNECT_TIMEOUT_MS, 1);
    int error = ready > 0 ? 0 : ready == 0 ? ETIMEDOUT : ECANCELED;
    socklen_t size = sizeof error;
    if (ready > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) < 0) error = errno;
    if (error) {
      close(fd);
      return -error;
    }
  }
  c->upstream = fd;
  return 0;
}

/* One direction of a relay: from -> pipe -> to. */
struct direction {
  int from, to, pipe[2];
  long pending; /* bytes in the pipe */
  int done;
  /* Toward the client, after the other direction ended: the end is the client's last event,
   * left to coop_relay_release's close (after the join), so a client that reads it knows the
   * connection's thread is gone. */
  int last_to_client;
};

/* Moves what it can without blocking. Returns 1 if it made progress. At EOF or an error it
 * half-closes `to` (unless last_to_client), so that the peer sees the end as it would have
 * without us. */
static int advance(struct direction *d) {
  int progress = 0;
  while (!d->done) {
    if (d->pending > 0) {
      ssize_t w = splice(d->pipe[0], NULL, d->to, NULL, d->pending,
                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (w > 0) {
        d->pending -= w, progress = 1;
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno == EAGAIN) return progress;
    } else {
      ssize_t n = splice(d->from, NULL, d->pipe[1], NULL, PIPE_SIZE,
                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        d->pending = n, progress = 1;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return progress;
    }
    /* EOF, a reset, or a peer that is gone */
    if (!d->last_to_client) shutdown(d->to, SHUT_WR);
    d->done = 1, progress = 1;
  }
  return progress;
}

static int open_pipe(int p[2]) {
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) return -1;
  fcntl(p[1], F_SETPIPE_SZ, PIPE_SIZE);
  return 0;
}

/* Splices both directions until both have ended, or the proxy stops. */
static void relay_both(struct conn *c) {
  struct direction d[2] = {{c->client, c->upstream, {-1, -1}, 0, 0, 0},
                           {c->upstream, c->client, {-1, -1}, 0, 0, 0}};
  if (open_pipe(d[0].pipe) < 0 || open_pipe(d[1].pipe) < 0) goto out;
  while (!d[0].done || !d[1].done) {
    /* A steady transfer never waits in poll(): look at the stop flag on every round too. */
    if (__atomic_load_n(&c->relay->stopping, __ATOMIC_RELAXED)) break;
    int progress = advance(&d[0]);
    d[1].last_to_client = d[0].done;
    if (progress | advance(&d[1])) continue;
    struct pollfd p[3] = {{c->relay->stop, POLLIN, 0}};
    int n = 1;
    for (int i = 0; i < 2; i++) {
      if (d[i].done) continue;
      p[n].fd = d[i].pending ? d[i].to : d[i].from;
      p[n++].events = d[i].pending ? POLLOUT : POLLIN;
    }
    if (poll(p, n, -1) < 0 && errno != EINTR) break;
    if (p[0].revents) break;
  }
out:
  for (int i = 0; i < 2; i++) {
    if (d[i].pipe[0] >= 0) close(d[i].pipe[0]), close(d[i].pipe[1]);
  }
}

static void *serve(void *arg) {
  struct conn *c = arg;
  struct relay *r = c->relay;
  if (read_head(c) == 0) {
    post(r, c->id, EV_HEAD, 0);
    for (;;) {
      int command = next_command(c);
      if (command == CMD_REPLY) {
        send_all(r, c->client, c->to_client, c->to_client_len);
        break;
      }
      if (command != CMD_DIAL) break;
      int result = dial(c);
      if (result < 0) {
        pthread_mutex_lock(&r->lock);
        c->answered = 0; /* TypeScript answers with a 502 */
        pthread_mutex_unlock(&r->lock);
      }
      post(r, c->id, EV_DIALED, result);
      if (result < 0) continue;
      if (send_all(r, c->client, c->to_client, c->to_client_len) == 0 &&
          send_all(r, c->upstream, c->to_upstream, c->to_upstream_len) == 0 &&
          send_all(r, c->upstream, c->buf + c->head_len, c->rest_len) == 0)
        relay_both(c);
      break;
    }
  }
  /* The client's socket stays open until coop_relay_release has joined this thread: a client
   * that reads the end of a connection the relay ended (a reply, a refused dial) knows that the
   * connection's thread is gone, and its slot under max_open free. */
  if (c->upstream >= 0) close(c->upstream);
  c->upstream = -1;
  post(r, c->id, EV_DONE, 0);
  return NULL;
}

static unsigned char *copy_of(const unsigned char *bytes, long len) {
  unsigned char *copy = malloc(len ? len : 1);
  if (copy && len) memcpy(copy, bytes, len);
  return copy;
}

/* Starts a thread with every signal blocked: Deno's handlers stay with Deno's threads. */
static int start_thread(pthread_t *thread, void *(*fn)(void *), void *arg) {
  pthread_attr_t attr;
  sigset_t all, old;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, THREAD_STACK);
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int error = pthread_create(thread, &attr, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (error == 0) pthread_setname_np(*thread, "coop-relay"); /* for tests and ps -L */
  pthread_attr_destroy(&attr);
  return error;
}

/* Past the cap: the refusal (it fits in the socket's buffer, so the send does not wait), then
 * close, before reading anything — the client reads the 503 and then EOF. */
static void refuse(struct relay *r, int client) {
  while (send(client, r->refusal, r->refusal_len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
         errno == EINTR) {
  }
  close(client);
  post(r, 0, EV_REFUSED, ++r->refused);
}

/* Accepts one connection and starts its thread (or refuses it past the cap). 0, 1 when accept
 * failed otherwise (out of fds or memory), -1 when the backlog is empty. */
static int accept_one(struct relay *r) {
  int client = accept4(r->listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (client < 0) {
    if (errno == EAGAIN) return -1;
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      struct timespec pause = {0, 10 * 1000 * 1000}; /* don't spin while out of fds */
      nanosleep(&pause, NULL);
    }
    return 1;
  }
  pthread_mutex_lock(&r->lock);
  int full = r->open >= r->max_open;
  pthread_mutex_unlock(&r->lock);
  if (full) {
    refuse(r, client);
    return 0;
  }
  struct conn *c = calloc(1, sizeof *c);
  if (!c) {
    close(client);
    return 0;
  }
  c->relay = r, c->client = client, c->upstream = -1;
  pthread_mutex_lock(&r->lock);
  c->id = r->next_id + 1; /* ids 1..next_id are exactly the connections given a thread */
  int error = start_thread(&c->thread, serve, c);
  if (error == 0) c->next = r->conns, r->conns = c, r->open++, r->next_id = c->id;
  pthread_mutex_unlock(&r->lock);
  if (error) close(client), free(c);
  return 0;
}

/* Accepts until stopped. Draining, it first accepts whatever is still in the backlog: the
 * sandbox is gone, but a connection it made is queued there with its whole request. The exit
 * event carries how many connections got a thread; each of them posts EV_HEAD or EV_DONE. */
static void *accept_loop(void *arg) {
  struct relay *r = arg;
  for (;;) {
    if (wait_for(r, r->listener, POLLIN, -1, 1) < 0) {
      if (draining(r) && !__atomic_load_n(&r->stopping, __ATOMIC_RELAXED)) {
        while (accept_one(r) == 0) {
        }
      }
      break;
    }
    accept_one(r);
  }
  pthread_mutex_lock(&r->lock);
  int32_t accepted = (int32_t)r->next_id;
  pthread_mutex_unlock(&r->lock);
  post(r, 0, EV_ACCEPTOR_EXIT, accepted);
  return NULL;
}

/* Listens on unix socket `path` and starts accepting, at most max_open connections at once
 * (each further one gets `refusal` and is closed). out[0]: the events fd for TypeScript to read
 * (its own to close); out[1]: errno on failure. Returns the proxy, or NULL. */
struct relay *coop_relay_start(const char *path, int max_open, const unsigned char *refusal,
                               long refusal_len, int *out) {
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  int events[2] = {-1, -1};
  if (max_open < 1 || refusal_len < 0) {
    out[1] = EINVAL;
    return NULL;
  }
  struct relay *r = calloc(1, sizeof *r);
  if (!r) {
    out[1] = ENOMEM;
    return NULL;
  }
  r->listener = r->stop = r->drain = -1;
  r->max_open = max_open;
  r->refusal_len = refusal_len;
  r->refusal = copy_of(refusal, refusal_len);
  if (!r->refusal) {
    errno = ENOMEM;
    goto fail;
  }
  if (strlen(path) >= sizeof address.sun_path) {
    errno = ENAMETOOLONG;
    goto fail;
  }
  strcpy(address.sun_path, path);
  r->listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (r->listener < 0 || bind(r->listener, (struct sockaddr *)&address, sizeof address) < 0 ||
      listen(r->listener, 128) < 0)
    goto fail;
  r->stop = eventfd(0, EFD_CLOEXEC);
  r->drain = eventfd(0, EFD_CLOEXEC);
  if (r->stop < 0 || r->drain < 0 || pipe2(events, O_CLOEXEC) < 0) goto fail;
  r->events = events[1];
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->changed, NULL);
  int error = start_thread(&r->acceptor, accept_loop, r);
  if (error) {
    errno = error;
    goto fail;
  }
  out[0] = events[0];
  return r;
fail:
  out[1] = errno;
  if (events[0] >= 0) close(events[0]), close(events[1]);
  if (r->stop >= 0) close(r->stop);
  if (r->drain >= 0) close(r->drain);
  if (r->listener >= 0) close(r->listener);
  free(r->refusal);
  free(r);
  return NULL;
}

static struct conn *find(struct relay *r, uint32_t id) {
  for (struct conn *c = r->conns; c; c = c->next) {
    if (c->id == id) return c;
  }
  return NULL;
}

/* Copies connection id's request head (up to and including its blank line) into buf. Returns
 * its length, or -errno. Valid after EV_HEAD. */
long coop_relay_head(struct relay *r, uint32_t id, unsigned char *buf, long cap) {
  pthread_mutex_lock(&r->lock);
  struct conn *c = find(r, id);
  long len = !c ? -ENOENT : c->head_len > cap ? -ENOSPC : c->head_len;
  if (len > 0) memcpy(buf, c->buf, len);
  pthread_mutex_unlock(&r->lock);
  return len;
}

/* Gives connection id its command; a NULL address means "send to_client and close". */
static int command(struct relay *r, uint32_t id, const struct sockaddr_storage *address,
                   socklen_t address_len, const unsigned char *to_client, long to_client_len,
                   const unsigned char *to_upstream, long to_upstream_len) {
  unsigned char *client_copy = copy_of(to_client, to_client_len);
  unsigned char *upstream_copy = copy_of(to_upstream, to_upstream_len);
  int result = 0;
  pthread_mutex_lock(&r->lock);
  struct conn *c = find(r, id);
  if (!client_copy || !upstream_copy) {
    result = -ENOMEM;
  } else if (!c || c->answered) {
    result = !c ? -ENOENT : -EBUSY;
  } else {
    c->answered = 1;
    free(c->to_client), free(c->to_upstream);
    c->to_client = client_copy, c->to_client_len = to_client_len;
    c->to_upstream = upstream_copy, c->to_upstream_len = to_upstream_len;
    client_copy = upstream_copy = NULL;
    if (address) c->address = *address, c->address_len = address_len;
    c->command = address ? CMD_DIAL : CMD_REPLY;
    pthread_cond_broadcast(&r->changed);
  }
  pthread_mutex_unlock(&r->lock);
  free(client_copy), free(upstream_copy);
  return result;
}

/* Sends bytes to connection id's client, then closes the connection. 0 or -errno. */
int coop_relay_reply(struct relay *r, uint32_t id, const unsigned char *bytes, long len) {
  return command(r, id, NULL, 0, bytes, len, NULL, 0);
}

/* Connects connection id to numeric address ip:port (EV_DIALED tells how that went); on
 * success sends to_client to the client, to_upstream and then whatever followed the head to the
 * upstream, and relays both ways. 0 (command accepted) or -errno. */
int coop_relay_dial(struct relay *r, uint32_t id, const char *ip, int port,
                    const unsigned char *to_client, long to_client_len,
                    const unsigned char *to_upstream, long to_upstream_len) {
  struct sockaddr_storage address = {0};
  socklen_t len;
  struct sockaddr_in *v4 = (struct sockaddr_in *)&address;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&address;
  if (port < 1 || port > 65535) return -EINVAL;
  if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET, v4->sin_port = htons(port), len = sizeof *v4;
  } else if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6, v6->sin6_port = htons(port), len = sizeof *v6;
  } else {
    return -EINVAL; /* a name: the relay never resolves */
  }
  return command(r, id, &address, len, to_client, to_client_len, to_upstream, to_upstream_len);
}

/* Frees connection id after its EV_DONE (joining its thread, which has posted its last event).
 * 0 or -errno. */
int coop_relay_release(struct relay *r, uint32_t id) {
  pthread_mutex_lock(&r->lock);
  struct conn **link = &r->conns;
  while (*link && (*link)->id != id) link = &(*link)->next;
  struct conn *c = *link;
  if (c) *link = c->next, r->open--;
  pthread_mutex_unlock(&r->lock);
  if (!c) return -ENOENT;
  pthread_join(c->thread, NULL);
  close(c->client);
  free(c->to_client), free(c->to_upstream), free(c);
  return 0;
}

/* The sandbox is gone: accepts what is left in the backlog, then stops accepting
 * (EV_ACCEPTOR_EXIT with the number of connections accepted in all); head reads no longer wait
 * and dials end as canceled, so every connection reports its head or its end promptly. Open
 * relays go on until coop_relay_stop. */
void coop_relay_drain(struct relay *r) {
  uint64_t one = 1;
  __atomic_store_n(&r->draining, 1, __ATOMIC_RELEASE);
  while (write(r->drain, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

/* Stops accepting and ends every connection; EV_DONE and then EV_ACCEPTOR_EXIT follow. */
void coop_relay_stop(struct relay *r) {
  uint64_t one = 1;
  while (write(r->stop, &one, sizeof one) < 0 && errno == EINTR) {
  }
  pthread_mutex_lock(&r->lock);
  __atomic_store_n(&r->stopping, 1, __ATOMIC_RELAXED); /* also read without the lock */
  pthread_cond_broadcast(&r->changed);
  pthread_mutex_unlock(&r->lock);
}

/* After coop_relay_stop, EV_ACCEPTOR_EXIT and coop_relay_release of every connection: joins
 * the acceptor and frees the proxy (the events fd stays the caller's to close). */
void coop_relay_free(struct relay *r) {
  pthread_join(r->acceptor, NULL);
  while (r->conns) coop_relay_release(r, r->conns->id); /* only if the caller skipped some */
  close(r->listener), close(r->stop), close(r->drain), close(r->events);
  pthread_mutex_destroy(&r->lock);
  pthread_cond_destroy(&r->changed);
  free(r->refusal);
  free(r);
}

/* The proxy's view of this host's interfaces (src/sandbox/proxy/host_network_watch.ts) is read
 * again only after the kernel announced a change: a NETLINK_ROUTE socket subscribed to link
 * and address events. The kernel queues each notification to every subscriber inside the
 * syscall that changed the address, before it returns, so a decision that finds the queue
 * empty sees the same addresses a fresh listing would. Returns the socket, or -errno. */
int32_t coop_netwatch_open(void) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (fd < 0) return -errno;
  struct sockaddr_nl addr = {.nl_family = AF_NETLINK,
                             .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR};
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
    int error = errno;
    close(fd);
    return -error;
  }
  return fd;
}

/* Drains the socket: 1 when anything arrived since the last call (or was lost: ENOBUFS, the
 * queue overflowed), 0 when nothing did, -errno when the socket cannot be read. */
int32_t coop_netwatch_changed(int32_t fd) {
  char buf[8192];
  int changed = 0;
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      changed = 1;
    } else if (n < 0 && errno == ENOBUFS) {
      changed = 1;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return changed;
    } else {
      return n < 0 ? -errno : -EIO;
    }
  }
}
