/* The pid-1 init of a sandbox: a static binary without libc, run from a sealed memfd.
 * It builds the sandbox's world (mounts, hostname, fds, capabilities, Landlock, seccomp),
 * forks the command, forwards signals, reaps everything and exits with the command's status.
 * It runs in its own address space, so unlike the trampoline's child it may use its stack
 * freely; it still must not depend on anything outside itself. */
#ifndef COOP_INIT_H
#define COOP_INIT_H

#include "../protocol.h"
#include "../sys.h"

#define COOP_MAX_ARGS 4096
#define COOP_MAX_ENV 512
#define COOP_MAX_ENTRIES 256
#define COOP_PATH_MAX 4096
#define COOP_MAX_RLIMITS 16

/* struct sockaddr_in as the kernel lays it out (<linux/in.h> wants libc's headers). */
struct coop_sockaddr_in {
  unsigned short family;
  unsigned char port[2]; /* network order */
  unsigned char addr[4];
  unsigned char zero[8];
};

struct coop_pair {
  const char *a;
  const char *b;
};

/* struct msghdr and cmsghdr as the kernel lays them out (no libc headers here). */
struct coop_iovec {
  void *base;
  unsigned long len;
};
struct coop_msghdr {
  void *name;
  int namelen;
  struct coop_iovec *iov;
  unsigned long iovlen;
  void *control;
  unsigned long controllen;
  int flags;
};
struct coop_cmsg_fds {
  unsigned long len;
  int level;
  int type;
  int fds[4]; /* with the go byte: spec, workspace, held overlay, terminal (spawn.c) */
};
#define COOP_CMSG_HEADER (sizeof(unsigned long) + 2 * sizeof(int))
#define COOP_SOL_SOCKET 1
#define COOP_SCM_RIGHTS 1
#define COOP_MSG_CMSG_CLOEXEC 0x40000000
#define COOP_MSG_PEEK 0x2
#define COOP_MSG_DONTWAIT 0x40
#define COOP_MSG_NOSIGNAL 0x4000

struct coop_spec {
  const char *argv[COOP_MAX_ARGS + 1];
  int argc;
  const char *envp[COOP_MAX_ENV + 1];
  int envc;
  const char *hostname;
  const char *workspace;
  int workspace_fd; /* an idmapped mount of the workspace from the gateway, or -1 */
  int held_fd;      /* the first overlay, held by the gateway (COOP_FD_HELD), or -1 */
  int hold;         /* tag 'K': send a fresh first overlay back on the go socket */
  int terminal;     /* the command runs on the pty at COOP_FD_TERMINAL */
  const char *cwd;
  const char *net;
  const char *proxy_auth; /* "Basic …" for the init's own requests to the proxy */
  unsigned long tmp_size;
  int fail_at;
  int session; /* tag 'S': serve commands from the go socket (session.c) */
  struct {
    unsigned int resource;
    unsigned long value;
  } rlimits[COOP_MAX_RLIMITS];
  int rlimit_count;
  struct coop_pair ro_binds[COOP_MAX_ENTRIES];
  int ro_bind_count;
  struct coop_pair symlinks[COOP_MAX_ENTRIES];
  int symlink_count;
  struct coop_pair files[COOP_MAX_ENTRIES];
  int file_count;
  const char *dirs[COOP_MAX_ENTRIES];
  int dir_count;
  const char *protected_paths[COOP_MAX_ENTRIES];
  int protected_count;
  /* rootfs: overlays ({lower, upper, work} host paths and where inside), at most one of them
   * at "/"; or a host directory as the root (dir_root); and persist binds (host, inside). */
  struct {
    const char *lower, *upper, *work, *target;
  } overlays[4];
  int overlay_count;
  const char *dir_root;
  struct coop_pair persists[COOP_MAX_ENTRIES];
  int persist_count;
};

/* rt.c */
void *memset(void *d, int c, unsigned long n);
void *memcpy(void *d, const void *s, unsigned long n);
unsigned long coop_strlen(const char *s);
int coop_streq(const char *a, const char *b);
int coop_strneq(const char *a, const char *b, unsigned long n);
/* Joins a and b into out (size COOP_PATH_MAX); returns 0 or -ENAMETOOLONG. out may be a,
 * never b. */
int coop_join(char *out, const char *a, const char *b);
/* Appends s to buf (size cap) at *len, truncating; keeps buf NUL-terminated. */
void coop_append(char *buf, unsigned long *len, unsigned long cap, const char *s);
unsigned long coop_parse_ulong(const char *s);
void coop_ulong_to_str(unsigned long v, char *out);
void coop_report(int kind, int a, int b);
/* Marks the step about to run; fails it on purpose when the spec asks (error-path tests). */
void coop_step(const struct coop_spec *spec, int step);
/* Reports {step, errno} to the gateway and exits: nothing of the command has run. */
__attribute__((noreturn)) void coop_fail(int step, long err);
__attribute__((noreturn)) void coop_exit(int code);
/* Calls coop_fail(step, -ret) when ret is a negative errno. */
long coop_check(int step, long ret);

/* session.c: the id of the command a forked child runs (0 in the init); serving them. */
extern int coop_session_command;
__attribute__((noreturn)) void coop_session_serve(struct coop_spec *spec);

/* main.c: kills and reaps every other process of the namespace. */
void coop_end_all(void);

/* spec.c */
void coop_read_spec(struct coop_spec *spec);

/* mounts.c */
void coop_build_root(const struct coop_spec *spec);

/* rootfs.c: whether the root is an image (an overlay at "/" or a directory root), whose /etc
 * files are bound over the image's instead of written. */
int coop_image_root(const struct coop_spec *spec);
/* rootfs.c: mounts the spec's overlays and directory root, and opens the persist sources; runs
 * while the host is still at /oldroot. */
void coop_mount_root_layers(const struct coop_spec *spec);
/* rootfs.c: an image root's synthesized files, written aside while the host is visible. */
void coop_stage_files(const struct coop_spec *spec);
/* rootfs.c: binds the staged files and the persist directories; runs once /oldroot is gone, so
 * every path (and symlink) inside the image resolves within the sandbox's own view. */
void coop_finish_root_layers(const struct coop_spec *spec);
/* rootfs.c: the i-th directory the command may write besides /work and /tmp (Landlock), or 0. */
const char *coop_writable_path(int i);

/* process.c */
void coop_reset_signals(void);
void coop_close_inherited_fds(void);
void coop_loopback_up(void);
void coop_drop_privileges(void);
__attribute__((noreturn)) void coop_exec_command(const struct coop_spec *spec);

/* forwarder.c: listens on 127.0.0.1:COOP_PROXY_PORT and forks the relay to the proxy. */
void coop_start_proxy_forwarder(void);
/* forwarder.c: a connection to the policy proxy's unix socket, or -errno. */
long coop_proxy_connect(void);
/* forwarder.c: moves bytes from -> to until EOF, half-closes `to`, and exits; when `to` fails
 * and `from` is the client's TCP socket (from_is_client), first reads what the client still
 * sends for a bounded time, so that closing it does not reset the connection. */
__attribute__((noreturn)) void coop_relay(int from, int to, int from_is_client);
/* forwarder.c: accepts forever, forking serve_one(client, context) for each connection. */
__attribute__((noreturn)) void coop_accept_forever(int listener,
                                                   void (*serve_one)(int client, void *context),
                                                   void *context);

/* The names the stub resolver handed out, shared (MAP_SHARED) between the stub, which writes
 * them, and the capture listener, which reads them back from the address a connection was
 * made to: COOP_FAKE_NET_A.COOP_FAKE_NET_B.0.0 + 1 + index. */
#define COOP_FAKE_NAMES 4096
#define COOP_NAME_MAX 256
struct coop_fake_names {
  unsigned next; /* the slot the next new name takes (oldest first once all are used) */
  char names[COOP_FAKE_NAMES][COOP_NAME_MAX];
};

/* The sockets of transparent capture, opened while the init may still bind port 53. */
struct coop_capture {
  int listener; /* TCP 127.0.0.1:COOP_CAPTURE_PORT */
  int dns;      /* UDP 127.0.0.1:53 */
};

/* capture.c: default route via lo and the nf_tables redirect (as root of the namespace). */
void coop_setup_capture(void);
/* captured.c: opens the capture sockets (before the capabilities are dropped). */
void coop_open_capture(struct coop_capture *capture);
/* captured.c: forks the stub resolver and the capture listener; the init keeps neither the
 * sockets nor the shared table. */
void coop_start_capture(struct coop_capture *capture, const struct coop_spec *spec);
/* dns_stub.c: answers DNS queries on `fd` forever (see the file). */
__attribute__((noreturn)) void coop_dns_stub(int fd, const char *auth,
                                             struct coop_fake_names *names);
/* captured.c: connects to the policy proxy and sends `request`; the socket, or -errno. */
long coop_proxy_send(const char *request);
/* captured.c: reads the proxy's response head (and not a byte more) into `head`,
 * NUL-terminated; 0, or -EPROTO when the proxy closed first (head holds what came). */
int coop_proxy_read_head(long up, char *head, unsigned long cap);

/* landlock.c: returns the Landlock ABI in force, 0 when the kernel has none. */
int coop_apply_landlock(const struct coop_spec *spec);

/* limits.c: sets every rlimit of the spec (soft = hard) on the init, which the command
 * inherits. */
void coop_apply_rlimits(const struct coop_spec *spec);

/* ipc_limits.c: the spec's RLIMIT_AS (the memory limit on the rlimit path), or 0. */
unsigned long coop_address_space_limit(const struct coop_spec *spec);
/* ipc_limits.c: bounds the memory the sandbox's IPC namespace can hold outside any address
 * space (SysV shm, messages, semaphores; POSIX queues) to about `limit`. */
void coop_bound_ipc_memory(unsigned long limit, unsigned long page_size);

/* seccomp.c: installs the filter (last, needs no_new_privs); returns 1. */
int coop_install_seccomp(const struct coop_spec *spec);

#endif
