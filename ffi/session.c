/* The gateway's side of a session sandbox's command channel (ffi/init/session.c): sends a
 * command — its spec as a memfd and its stdio pipes — or a signal for one, on the go socket. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "protocol.h"

static int send_request(int sock, int op, int id, int value, const int *fds, int count) {
  int req[3] = {op, id, value};
  struct iovec iov = {.iov_base = req, .iov_len = sizeof req};
  union {
    struct cmsghdr hdr;
    char buf[CMSG_SPACE(4 * sizeof(int))];
  } control;
  memset(&control, 0, sizeof control);
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  if (count) {
    msg.msg_control = control.buf;
    msg.msg_controllen = CMSG_SPACE(count * sizeof(int));
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(count * sizeof(int));
    memcpy(CMSG_DATA(c), fds, count * sizeof(int));
  }
  ssize_t n;
  /* Never blocks the gateway's event loop: an init that stopped reading its requests fails the
   * command (EAGAIN) instead. */
  do n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  return n == (ssize_t)sizeof req ? 0 : n < 0 ? -errno : -EPIPE;
}

/* Starts command `id` in the session whose go socket is `sock`: spec (the per-command spec:
 * argv, env, cwd, rlimits) in a memfd, and fresh pipes for its stdio. out gets our ends:
 * [stdin write end or -1 (want_stdin 0: the command reads EOF), stdout, stderr]. Returns 0, or
 * -errno with nothing left open. */
int coop_session_run(int sock, int id, const uint8_t *spec, size_t len, int want_stdin,
                     int32_t *out) {
  int p[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}}, err = 0;
  int memfd = memfd_create("coop-command", MFD_CLOEXEC);
  if (memfd < 0) return -errno;
  size_t off = 0;
  while (off < len) {
    ssize_t n = write(memfd, spec + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      goto done;
    }
    off += (size_t)n;
  }
  if (lseek(memfd, 0, SEEK_SET) < 0) {
    err = errno;
    goto done;
  }
  for (int i = 0; i < 3; i++)
    if (pipe2(p[i], O_CLOEXEC) < 0) {
      err = errno;
      goto done;
    }
  int fds[4] = {memfd, p[0][0], p[1][1], p[2][1]};
  int r = send_request(sock, COOP_OP_RUN, id, 0, fds, 4);
  if (r) err = -r;
done:
  close(memfd);
  for (int i = 0; i < 3; i++) {
    /* The command's ends now live in the init (or nowhere). */
    if (p[i][i == 0 ? 0 : 1] >= 0) close(p[i][i == 0 ? 0 : 1]);
  }
  int ours[3] = {p[0][1], p[1][0], p[2][0]};
  if (err) {
    for (int i = 0; i < 3; i++)
      if (ours[i] >= 0) close(ours[i]);
    return -err;
  }
  if (!want_stdin) close(ours[0]), ours[0] = -1;
  for (int i = 0; i < 3; i++) out[i] = ours[i];
  return 0;
}

/* Asks the init to send `sig` to the process group of command `id`. Returns 0 or -errno. */
int coop_session_signal(int sock, int id, int sig) {
  return send_request(sock, COOP_OP_SIGNAL, id, sig, 0, 0);
}
