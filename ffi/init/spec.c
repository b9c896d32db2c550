/* Reads and parses the spec the gateway serialized (src/sandbox/spec.ts writes it). */
#include "init.h"

#include <linux/errno.h>

#define COOP_SPEC_MAX (4 << 20)

static char spec_buf[COOP_SPEC_MAX + 1];

/* Returns the string at *pos and advances past its NUL, or fails the spec step. */
static const char *take(unsigned long *pos, unsigned long len) {
  const char *s = spec_buf + *pos;
  while (*pos < len && spec_buf[*pos]) (*pos)++;
  if (*pos >= len) coop_fail(COOP_STEP_SPEC, EINVAL);
  (*pos)++;
  return s;
}

static void add_pair(struct coop_pair *list, int *count, const char *a, const char *b) {
  if (*count >= COOP_MAX_ENTRIES) coop_fail(COOP_STEP_SPEC, E2BIG);
  list[*count].a = a;
  list[*count].b = b;
  (*count)++;
}

void coop_read_spec(struct coop_spec *spec) {
  unsigned long len = 0;
  for (;;) {
    long n = SYS3(__NR_read, COOP_FD_SPEC, spec_buf + len, COOP_SPEC_MAX - len);
    if (n == -EINTR) continue;
    coop_check(COOP_STEP_SPEC, n);
    if (n == 0) break;
    len += (unsigned long)n;
    if (len >= COOP_SPEC_MAX) coop_fail(COOP_STEP_SPEC, E2BIG);
  }
  spec_buf[len] = 0;
  SYS1(__NR_close, COOP_FD_SPEC);

  unsigned long pos = 0;
  if (!coop_streq(take(&pos, len), COOP_SPEC_MAGIC)) coop_fail(COOP_STEP_SPEC, EPROTO);
  spec->cwd = "/work";
  spec->hostname = "coop";
  spec->net = "none";
  spec->proxy_auth = "";
  for (;;) {
    if (pos >= len) coop_fail(COOP_STEP_SPEC, EINVAL);
    char tag = spec_buf[pos++];
    const char *a, *b;
    switch (tag) {
    case COOP_TAG_END:
      spec->argv[spec->argc] = 0;
      spec->envp[spec->envc] = 0;
      if (spec->argc == 0 || !spec->workspace) coop_fail(COOP_STEP_SPEC, EINVAL);
      return;
    case COOP_TAG_ARG:
      if (spec->argc >= COOP_MAX_ARGS) coop_fail(COOP_STEP_SPEC, E2BIG);
      spec->argv[spec->argc++] = take(&pos, len);
      break;
    case COOP_TAG_ENV:
      if (spec->envc >= COOP_MAX_ENV) coop_fail(COOP_STEP_SPEC, E2BIG);
      spec->envp[spec->envc++] = take(&pos, len);
      break;
    case COOP_TAG_HOSTNAME: spec->hostname = take(&pos, len); break;
    case COOP_TAG_WORKSPACE: spec->workspace = take(&pos, len); break;
    case COOP_TAG_CWD: spec->cwd = take(&pos, len); break;
    case COOP_TAG_NET: spec->net = take(&pos, len); break;
    case COOP_TAG_PROXY_AUTH: spec->proxy_auth = take(&pos, len); break;
    case COOP_TAG_TMP_SIZE: spec->tmp_size = coop_parse_ulong(take(&pos, len)); break;
    case COOP_TAG_RLIMIT:
      if (spec->rlimit_count >= COOP_MAX_RLIMITS) coop_fail(COOP_STEP_SPEC, E2BIG);
      a = take(&pos, len), b = take(&pos, len);
      spec->rlimits[spec->rlimit_count].resource = (unsigned int)coop_parse_ulong(a);
      spec->rlimits[spec->rlimit_count].value = coop_parse_ulong(b);
      spec->rlimit_count++;
      break;
    case COOP_TAG_SESSION: spec->session = take(&pos, len)[0] == '1'; break;
    case COOP_TAG_HOLD:
      take(&pos, len); /* the tag's empty string */
      spec->hold = 1;
      break;
    case COOP_TAG_TERMINAL:
      take(&pos, len); /* the tag's empty string */
      spec->terminal = 1;
      break;
    case COOP_TAG_FAIL_AT: spec->fail_at = (int)coop_parse_ulong(take(&pos, len)); break;
    case COOP_TAG_DIR:
      if (spec->dir_count >= COOP_MAX_ENTRIES) coop_fail(COOP_STEP_SPEC, E2BIG);
      spec->dirs[spec->dir_count++] = take(&pos, len);
      break;
    case COOP_TAG_PROTECT:
      if (spec->protected_count >= COOP_MAX_ENTRIES) coop_fail(COOP_STEP_SPEC, E2BIG);
      spec->protected_paths[spec->protected_count++] = take(&pos, len);
      break;
    case COOP_TAG_RO_BIND:
      a = take(&pos, len), b = take(&pos, len);
      add_pair(spec->ro_binds, &spec->ro_bind_count, a, b);
      break;
    case COOP_TAG_SYMLINK:
      a = take(&pos, len), b = take(&pos, len);
      add_pair(spec->symlinks, &spec->symlink_count, a, b);
      break;
    case COOP_TAG_OVERLAY:
      if (spec->overlay_count >= 4) coop_fail(COOP_STEP_SPEC, E2BIG);
      spec->overlays[spec->overlay_count].lower = take(&pos, len);
      spec->overlays[spec->overlay_count].upper = take(&pos, len);
      spec->overlays[spec->overlay_count].work = take(&pos, len);
      spec->overlays[spec->overlay_count].target = take(&pos, len);
      spec->overlay_count++;
      break;
    case COOP_TAG_DIR_ROOT: spec->dir_root = take(&pos, len); break;
    case COOP_TAG_PERSIST:
      a = take(&pos, len), b = take(&pos, len);
      add_pair(spec->persists, &spec->persist_count, a, b);
      break;
    case COOP_TAG_FILE:
      a = take(&pos, len), b = take(&pos, len);
      add_pair(spec->files, &spec->file_count, a, b);
      break;
    default: coop_fail(COOP_STEP_SPEC, EPROTO);
    }
  }
}
