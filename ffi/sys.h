/* Raw system calls, used on both sides of the sandbox boundary.
 *
 * Why raw: the trampoline's child shares the Deno process's memory (CLONE_VM) and its thread's
 * TLS, so glibc wrappers there would write the parent thread's errno and, for set*id, signal
 * threads that do not exist in the child. The pid-1 init is linked without libc at all. Every
 * call returns -errno on failure, like the kernel does. */
#ifndef COOP_SYS_H
#define COOP_SYS_H

#include <asm/unistd.h>

#if defined(__x86_64__)
static inline long coop_sys6(long n, long a, long b, long c, long d, long e, long f) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
static inline long coop_sys6(long n, long a, long b, long c, long d, long e, long f) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  return x0;
}
#else
#error "coop: unsupported architecture (x86_64 and aarch64 only)"
#endif

#define SYS0(n) coop_sys6((n), 0, 0, 0, 0, 0, 0)
#define SYS1(n, a) coop_sys6((n), (long)(a), 0, 0, 0, 0, 0)
#define SYS2(n, a, b) coop_sys6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define SYS3(n, a, b, c) coop_sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define SYS4(n, a, b, c, d) coop_sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define SYS5(n, a, b, c, d, e) \
  coop_sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)
#define SYS6(n, a, b, c, d, e, f) \
  coop_sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

#endif
