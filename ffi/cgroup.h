/* The parent side of the cgroup v1 limits path (ffi/cgroup.c). */
#ifndef COOP_CGROUP_H
#define COOP_CGROUP_H

#include <sys/types.h>

/* Moves pid into each cgroup directory of `dirs` (NUL-separated, ended by an empty string)
 * by writing it to <dir>/cgroup.procs. Returns 0 or a negative errno. */
int coop_cgroup_attach(pid_t pid, const char *dirs);

#endif
