/* The contract between the TypeScript side, the trampoline and the pid-1 init.
 * src/sandbox/protocol.ts mirrors every number here; tests/unit/protocol_test.ts checks that
 * the two files agree. */
#ifndef COOP_PROTOCOL_H
#define COOP_PROTOCOL_H

/* File descriptors the init starts with. */
#define COOP_FD_REPORT 3 /* write end: records to the gateway */
#define COOP_FD_SPEC 4   /* read: the serialized spec (a memfd that came with the go byte) */
#define COOP_FD_GO 5     /* socket: the go byte, sent once the id maps are written, carrying
                           * the spec and, for a root invoker, the workspace as an idmapped
                           * mount (SCM_RIGHTS, in that order); the gateway keeps its end open
                           * while the sandbox lives */
#define COOP_FD_WORKSPACE 6 /* the idmapped workspace mount, when one came with the go byte */
#define COOP_FD_TERMINAL 7  /* the pty slave for the command, when one came with the go byte */
#define COOP_FD_HELD 8      /* an environment's overlay the gateway holds, when one came with it */
#define COOP_FD_FIRST_FREE 9
/* The go byte: COOP_GO_TERMINAL when a pty slave is the last fd that comes with it; the _HELD
 * ones when a held overlay (a detached mount, src/sandbox/held_overlay.ts) comes before that. */
#define COOP_GO 'g'
#define COOP_GO_TERMINAL 't'
#define COOP_GO_HELD 'H'
#define COOP_GO_HELD_TERMINAL 'U'

/* Network "proxy": the init listens on 127.0.0.1:COOP_PROXY_PORT inside the sandbox and
 * forwards every connection to the gateway's policy proxy, whose unix socket the spec binds at
 * COOP_PROXY_SOCKET. The command may connect to that port and nowhere else (Landlock). */
#define COOP_PROXY_PORT 3128
#define COOP_PROXY_SOCKET "/run/coop/proxy.sock"
/* Networks "proxy" and "public" (transparent capture, ffi/init/capture.c): every TCP
 * connection to a non-loopback address is redirected to 127.0.0.1:COOP_CAPTURE_PORT, and the
 * stub resolver answers on 127.0.0.1:53 with addresses from COOP_FAKE_NET/16. */
#define COOP_CAPTURE_PORT 3129
#define COOP_FAKE_NET_A 198 /* 198.18.0.0/15 is benchmarking space: the proxy never dials it */
#define COOP_FAKE_NET_B 18

/* The signal the gateway sends the init to end the sandbox (timeout, cancel): the init kills
 * the command and then every other process, and reaps them all before it exits, so that their
 * CPU time is in its rusage. 64 is SIGRTMAX on x86_64 and aarch64; no libc reserves it. */
#define COOP_SIG_END 64

/* A record on the report pipe: three native-endian int32. */
struct coop_record {
  int kind;
  int a;
  int b;
};
#define COOP_REC_ERROR 1 /* a = step, b = errno: setup failed, nothing ran */
#define COOP_REC_EXEC 2  /* a = errno: the command itself could not be executed */
#define COOP_REC_EXIT 3  /* a = wait status of the command */
#define COOP_REC_READY 4 /* setup finished; a = landlock ABI in force (0: none), b = seccomp on */
/* Session mode (tag 'S', ffi/init/session.c): records about one command, a = its id. */
#define COOP_REC_STARTED 5   /* b = its pid inside the sandbox */
#define COOP_REC_UTIME 6     /* b = its user CPU time in ms (sent just before COOP_REC_ENDED) */
#define COOP_REC_STIME 7     /* b = its system CPU time in ms */
#define COOP_REC_ENDED 8     /* b = its wait status */
#define COOP_REC_REFUSED 9   /* b = errno: it could not be executed (or its spec was bad) */

/* Setup steps, in the order they run. Numbers are stable; the TypeScript name of
 * COOP_STEP_MOUNT_PRIVATE is "mount-private". */
#define COOP_STEP_SPEC 1
#define COOP_STEP_CLONE 2
#define COOP_STEP_ID_MAP 3
#define COOP_STEP_EXEC_INIT 4
#define COOP_STEP_WAIT_GO 5
#define COOP_STEP_SIGNALS 6
#define COOP_STEP_MOUNT_PRIVATE 7
#define COOP_STEP_MOUNT_ROOT 8
#define COOP_STEP_PIVOT_ROOT 9
#define COOP_STEP_BIND_READONLY 10
#define COOP_STEP_MOUNT_WORKSPACE 11
#define COOP_STEP_MOUNT_TMP 12
#define COOP_STEP_MOUNT_DEV 13
#define COOP_STEP_MOUNT_PROC 14
#define COOP_STEP_WRITE_ETC 15
#define COOP_STEP_SYMLINKS 16
#define COOP_STEP_UMOUNT_OLDROOT 17
#define COOP_STEP_REMOUNT_ROOT_READONLY 18
#define COOP_STEP_HOSTNAME 19
#define COOP_STEP_SETSID 20
#define COOP_STEP_CHDIR 21
#define COOP_STEP_CLOSE_FDS 22
#define COOP_STEP_RLIMITS 23
#define COOP_STEP_DROP_CAPABILITIES 24
#define COOP_STEP_NO_NEW_PRIVS 25
#define COOP_STEP_LANDLOCK 26
#define COOP_STEP_SECCOMP 27
#define COOP_STEP_FORK 28
#define COOP_STEP_LOOPBACK 29
#define COOP_STEP_CGROUP 30 /* the gateway places the init in its cgroups (ffi/cgroup.c) */
#define COOP_STEP_PROXY_FORWARDER 31 /* network "proxy": the 127.0.0.1 listener inside */
#define COOP_STEP_PROTECT_PATHS 32 /* workspace paths the owner's tools trust, made read-only */
#define COOP_STEP_NETWORK_MODE 33 /* the spec's network mode matches the init's namespace */
#define COOP_STEP_MASK_PROC 34 /* procfs entries about the host hidden behind empty ones */
#define COOP_STEP_IPC_LIMITS 35 /* rlimit path: the IPC namespace's memory bounded (R13) */
#define COOP_STEP_CAPTURE 36 /* networks "proxy"/"public": route, nf_tables, capture sockets */
/* rootfs (issue 14): the overlay or directory root and its top-level binds. 35 and 36 were
 * already taken when the plan reserved 35-37; 38-42 are the session's and the PTY's. */
#define COOP_STEP_ROOT_LAYERS 37
#define COOP_STEP_SESSION 38 /* session mode: the init's command channel (signalfd, go socket) */
#define COOP_STEP_TERMINAL 41 /* the pty: opened by the gateway, received by the init */
#define COOP_STEP_CONTROLLING_TERMINAL 42 /* the command's setsid, TIOCSCTTY and stdio on it */
#define COOP_STEP_PERSIST 43 /* persist binds and the /etc files bound over an image's */

/* Spec entries: one tag byte, then NUL-terminated strings (the count is fixed per tag). */
#define COOP_SPEC_MAGIC "COOP-SPEC-1"
#define COOP_TAG_ARG 'a'      /* argv element */
#define COOP_TAG_ENV 'e'      /* "NAME=value" */
#define COOP_TAG_HOSTNAME 'h' /* hostname */
#define COOP_TAG_WORKSPACE 'w' /* host path, bound read-write at /work */
#define COOP_TAG_RO_BIND 'r'  /* host path, sandbox path */
#define COOP_TAG_SYMLINK 'l'  /* target, sandbox path */
#define COOP_TAG_FILE 'f'     /* sandbox path, content */
#define COOP_TAG_DIR 'd'      /* sandbox path */
#define COOP_TAG_TMP_SIZE 't' /* bytes, decimal */
#define COOP_TAG_NET 'n'      /* "none", "host", "proxy" or "public" */
#define COOP_TAG_CWD 'c'      /* sandbox path */
#define COOP_TAG_RLIMIT 'R'   /* resource number, value (soft = hard), both decimal */
#define COOP_TAG_FAIL_AT 'x'  /* step number: fail there on purpose (tests of error paths) */
#define COOP_TAG_PROTECT 'p'  /* path relative to /work, re-mounted read-only over itself */
#define COOP_TAG_PROXY_AUTH 'A' /* "Basic …": the Proxy-Authorization the init's helpers send */
#define COOP_TAG_OVERLAY 'o' /* lower host path, upper, work, sandbox path ("/": the root) */
#define COOP_TAG_DIR_ROOT 'D' /* host directory, read-write as the sandbox's root */
#define COOP_TAG_PERSIST 'b'  /* host directory, sandbox path: bound read-write */
#define COOP_TAG_SESSION 'S' /* "1": the init stays and runs commands sent on the go
                              * socket (ffi/init/session.c) instead of the spec's argv */
#define COOP_TAG_TERMINAL 'T' /* (no strings) the command runs on the pty of the go byte */
#define COOP_TAG_HOLD 'K' /* (no strings) send a fresh overlay back on the go socket, to hold */
#define COOP_TAG_END 'z'

/* Session mode: a request on the go socket is three native-endian int32 {op, id, value}. */
#define COOP_OP_RUN 1    /* with SCM_RIGHTS: the command's spec (memfd), stdin, stdout, stderr */
#define COOP_OP_SIGNAL 2 /* value = signal for the process group of command `id` */

#endif
