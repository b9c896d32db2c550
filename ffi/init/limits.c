/* Resource limits (rlimits) of the sandbox: the init sets them on itself as its last setup
 * step, just before it forks the command, which inherits them.
 *
 * Last, because a low RLIMIT_NOFILE earlier would break setup (Landlock's ruleset fd, the
 * mounts' fds), and RLIMIT_NPROC/RLIMIT_AS must not constrain the init's own setup. Hard and
 * soft are equal: nothing inside can raise them again (that needs CAP_SYS_RESOURCE in the
 * initial user namespace). The gateway chooses which limits apply (src/sandbox/limits.ts);
 * this file only applies them, in spec order. */
#include "init.h"

struct coop_rlimit64 {
  unsigned long cur;
  unsigned long max;
};

void coop_apply_rlimits(const struct coop_spec *spec) {
  for (int i = 0; i < spec->rlimit_count; i++) {
    struct coop_rlimit64 limit = {spec->rlimits[i].value, spec->rlimits[i].value};
    coop_check(COOP_STEP_RLIMITS,
               SYS4(__NR_prlimit64, 0, spec->rlimits[i].resource, &limit, 0));
  }
}
