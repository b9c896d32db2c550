/* The init's tiny runtime: entry point, the few string helpers it needs, and reporting. */
#include "init.h"

#include <linux/errno.h>

/* The compiler may emit calls to these for struct copies and zeroing. */
void *memset(void *d, int c, unsigned long n) {
  unsigned char *p = d;
  while (n--) *p++ = (unsigned char)c;
  return d;
}

void *memcpy(void *d, const void *s, unsigned long n) {
  unsigned char *p = d;
  const unsigned char *q = s;
  while (n--) *p++ = *q++;
  return d;
}

/* Called with the initial stack pointer: argc, then argv. */
void coop_init_main(const long *stack);

#if defined(__x86_64__)
__asm__(".text\n.global _start\n_start:\n xor %rbp,%rbp\n mov %rsp,%rdi\n and $-16,%rsp\n call coop_init_main\n ud2\n");
#elif defined(__aarch64__)
__asm__(".text\n.global _start\n_start:\n mov x29, #0\n mov x30, #0\n mov x0, sp\n bl coop_init_main\n brk #0\n");
#endif

static int current_fail_at;

unsigned long coop_strlen(const char *s) {
  unsigned long n = 0;
  while (s[n]) n++;
  return n;
}

int coop_streq(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

int coop_strneq(const char *a, const char *b, unsigned long n) {
  for (unsigned long i = 0; i < n; i++) {
    if (a[i] != b[i]) return 0;
    if (!a[i]) return 1;
  }
  return 1;
}

int coop_join(char *out, const char *a, const char *b) {
  unsigned long la = coop_strlen(a), lb = coop_strlen(b);
  if (la + lb + 1 > COOP_PATH_MAX) return -ENAMETOOLONG;
  memcpy(out, a, la);
  memcpy(out + la, b, lb + 1);
  return 0;
}

void coop_append(char *buf, unsigned long *len, unsigned long cap, const char *s) {
  while (*s && *len + 1 < cap) buf[(*len)++] = *s++;
  buf[*len] = 0;
}

unsigned long coop_parse_ulong(const char *s) {
  unsigned long v = 0;
  while (*s >= '0' && *s <= '9') v = v * 10 + (unsigned long)(*s++ - '0');
  return v;
}

void coop_ulong_to_str(unsigned long v, char *out) {
  char tmp[24];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10), v /= 10;
  while (v);
  for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  out[n] = 0;
}

void coop_report(int kind, int a, int b) {
  struct coop_record rec = {kind, a, b};
  /* 12 bytes is far below PIPE_BUF, so the write is atomic or fails whole. */
  SYS3(__NR_write, COOP_FD_REPORT, &rec, sizeof rec);
}

__attribute__((noreturn)) void coop_exit(int code) {
  for (;;) SYS1(__NR_exit_group, code);
}

__attribute__((noreturn)) void coop_fail(int step, long err) {
  /* A session's command failing before its exec: nothing of it ran, the session lives on. */
  if (coop_session_command) {
    coop_report(COOP_REC_REFUSED, coop_session_command, (int)err);
    coop_exit(126);
  }
  coop_report(COOP_REC_ERROR, step, (int)err);
  coop_exit(125);
}

long coop_check(int step, long ret) {
  if (ret < 0 && ret > -4096) coop_fail(step, -ret);
  return ret;
}

void coop_step(const struct coop_spec *spec, int step) {
  if (spec) current_fail_at = spec->fail_at;
  if (current_fail_at == step) coop_fail(step, ECANCELED);
}
