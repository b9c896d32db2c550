/* A pseudo-terminal for a sandboxed command (`terminal` option, src/sandbox/terminal.ts).
 *
 * The gateway opens the pair in its own devpts; the slave goes to the init with the go byte
 * (ffi/spawn.c) and becomes the command's stdin, stdout, stderr and controlling terminal
 * (ffi/init/process.c); the master stays here. The sandbox still mounts its own devpts: a
 * program inside that opens /dev/ptmx gets a pty of the sandbox's instance, never the host's.
 *
 * Neither runtime's node:net accepts a tty fd (Deno refuses "TTY"; tty.ReadStream cannot
 * wrap a pty master), so a thread of ours moves the bytes between the master and one end of a
 * socketpair, which TypeScript reads and writes as a node:net Socket like the pipes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#define RELAY_BUF 16384
#define RELAY_STACK (64 * 1024)

struct pty_relay {
  int master; /* our own dup: TypeScript's master fd (for resize) closes independently */
  int sock;
  char to_sock[RELAY_BUF], to_master[RELAY_BUF];
};

/* Moves one buffer's worth: reads `from` when `buf` is empty, else writes what is pending to
 * `to`. Returns 0 to go on, 1 at the end of `from` (read 0, or EIO: a master whose slave is
 * closed everywhere), -1 when `to` is gone. */
static int relay_step(int from, int to, char *buf, size_t *len, size_t *off, short revents,
                      short wanted) {
  if (!(revents & (wanted | POLLHUP | POLLERR))) return 0;
  if (*len == 0) {
    ssize_t n = read(from, buf, RELAY_BUF);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n <= 0) return 1;
    *len = (size_t)n, *off = 0;
    return 0;
  }
  ssize_t n = send(to, buf + *off, *len - *off, MSG_NOSIGNAL);
  if (n < 0 && errno == ENOTSOCK) n = write(to, buf + *off, *len - *off);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
  if (n < 0) return -1;
  *off += (size_t)n;
  if (*off == *len) *len = 0;
  return 0;
}

/* Relays until the command's side is closed (the master reads EIO) and its output is
 * delivered, or TypeScript's socket is gone. Input that the program does not read never
 * blocks its output: each direction waits for its own reader. */
static void *relay_main(void *p) {
  struct pty_relay *r = p;
  size_t out_len = 0, out_off = 0, in_len = 0, in_off = 0;
  int input_open = 1, output_open = 1;
  while (output_open || out_len) {
    struct pollfd fds[2] = {{r->master, 0, 0}, {r->sock, 0, 0}};
    if (out_len) fds[1].events |= POLLOUT;
    else if (output_open) fds[0].events |= POLLIN;
    if (in_len) fds[0].events |= POLLOUT;
    else if (input_open) fds[1].events |= POLLIN;
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    /* TypeScript's socket is gone (closed, not half-closed): nothing can be delivered any more,
     * and its POLLHUP would end every poll() at once from now on, a spin while the command is
     * silent. */
    if (fds[1].revents & (POLLHUP | POLLERR)) break;
    /* master -> socket: the command's output */
    short from = out_len ? fds[1].revents : fds[0].revents;
    int st = relay_step(r->master, r->sock, r->to_sock, &out_len, &out_off, from,
                        out_len ? POLLOUT : POLLIN);
    if (st < 0) break;
    if (st > 0) output_open = 0;
    /* socket -> master: the owner's keys */
    if (in_len || input_open) {
      from = in_len ? fds[0].revents : fds[1].revents;
      st = relay_step(r->sock, r->master, r->to_master, &in_len, &in_off, from,
                      in_len ? POLLOUT : POLLIN);
      if (st < 0) in_len = 0, input_open = 0; /* the program's side is gone: drop the keys */
      if (st > 0) input_open = 0;
    }
  }
  close(r->master);
  close(r->sock);
  free(r);
  return NULL;
}

/* Starts the relay thread over a dup of master; returns TypeScript's socket end or -errno. */
static int start_relay(int master) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) return -errno;
  struct pty_relay *r = malloc(sizeof *r);
  int own = fcntl(master, F_DUPFD_CLOEXEC, 3);
  int err = !r ? ENOMEM : own < 0 ? errno : 0;
  /* Non-blocking on our socket end and on the master's open file (TypeScript only resizes it). */
  if (!err && (fcntl(pair[1], F_SETFL, O_NONBLOCK) < 0 || fcntl(own, F_SETFL, O_NONBLOCK) < 0))
    err = errno;
  if (!err) {
    r->master = own, r->sock = pair[1];
    pthread_attr_t attr;
    pthread_t thread;
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, RELAY_STACK);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* The thread inherits this mask: the runtime's signals stay with the runtime's threads. */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&thread, &attr, relay_main, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
  }
  if (err) {
    if (own >= 0) close(own);
    free(r);
    close(pair[0]), close(pair[1]);
    return -err;
  }
  return pair[0];
}

/* Opens a pty pair sized rows x cols and starts its relay: out[0] the socket TypeScript reads
 * the command's output from and writes its input to, out[1] the slave for coop_start, out[2]
 * the master for coop_pty_resize — all close-on-exec, none a controlling terminal of ours, each
 * the caller's to close. Returns 0, or -errno with nothing left open. */
int coop_pty_open(int rows, int cols, int32_t *out) {
  int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return -errno;
  int unlock = 0, err = 0;
  if (ioctl(master, TIOCSPTLCK, &unlock) < 0) err = errno;
  /* TIOCGPTPEER (Linux 4.13) opens the slave through the master, so no path lookup in
   * /dev/pts can be raced; by its number where the kernel lacks it. */
  int slave = err ? -1 : ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (!err && slave < 0 && (errno == EINVAL || errno == ENOTTY)) {
    int number = 0;
    char path[32];
    if (ioctl(master, TIOCGPTN, &number) < 0) err = errno;
    else {
      snprintf(path, sizeof path, "/dev/pts/%d", number);
      slave = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
    }
  }
  if (!err && slave < 0) err = errno;
  struct winsize size = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  if (!err && ioctl(master, TIOCSWINSZ, &size) < 0) err = errno;
  int sock = err ? -1 : start_relay(master);
  if (sock < 0 && !err) err = -sock;
  if (err) {
    if (slave >= 0) close(slave);
    close(master);
    return -err;
  }
  out[0] = sock;
  out[1] = slave;
  out[2] = master;
  return 0;
}

/* Sets the terminal's size on its master; the kernel sends SIGWINCH to the foreground process
 * group of the slave's session. Returns 0 or -errno. */
int coop_pty_resize(int master, int rows, int cols) {
  struct winsize size = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  return ioctl(master, TIOCSWINSZ, &size) < 0 ? -errno : 0;
}

/* Puts the terminal `fd` (the owner's, for `coop shell`) in raw mode as cfmakeraw does —
 * output processing off too, so the program's own pty alone translates newlines — after
 * saving its settings in saved (cap bytes). Returns 0, or -errno with nothing changed. */
int coop_tty_raw(int fd, uint8_t *saved, int64_t cap) {
  struct termios mode;
  if (cap < (int64_t)sizeof mode) return -EINVAL;
  if (tcgetattr(fd, &mode) < 0) return -errno;
  memcpy(saved, &mode, sizeof mode);
  cfmakeraw(&mode);
  return tcsetattr(fd, TCSADRAIN, &mode) < 0 ? -errno : 0;
}

/* Restores the settings coop_tty_raw saved; returns 0 or -errno. */
int coop_tty_restore(int fd, const uint8_t *saved) {
  struct termios mode;
  memcpy(&mode, saved, sizeof mode);
  return tcsetattr(fd, TCSADRAIN, &mode) < 0 ? -errno : 0;
}
