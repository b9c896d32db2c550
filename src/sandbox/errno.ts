/**
 * Linux errno names for the numbers the trampoline reports.
 * @module
 */

const NAMES: Record<number, [string, string]> = {
  1: ["EPERM", "operation not permitted"],
  2: ["ENOENT", "no such file or directory"],
  3: ["ESRCH", "no such process"],
  4: ["EINTR", "interrupted system call"],
  5: ["EIO", "input/output error"],
  7: ["E2BIG", "argument list too long"],
  8: ["ENOEXEC", "exec format error"],
  9: ["EBADF", "bad file descriptor"],
  11: ["EAGAIN", "resource temporarily unavailable"],
  12: ["ENOMEM", "cannot allocate memory"],
  13: ["EACCES", "permission denied"],
  14: ["EFAULT", "bad address"],
  16: ["EBUSY", "device or resource busy"],
  17: ["EEXIST", "file exists"],
  18: ["EXDEV", "invalid cross-device link"],
  20: ["ENOTDIR", "not a directory"],
  21: ["EISDIR", "is a directory"],
  22: ["EINVAL", "invalid argument"],
  24: ["EMFILE", "too many open files"],
  26: ["ETXTBSY", "text file busy"],
  27: ["EFBIG", "file too large"],
  28: ["ENOSPC", "no space left on device"],
  30: ["EROFS", "read-only file system"],
  32: ["EPIPE", "broken pipe"],
  36: ["ENAMETOOLONG", "file name too long"],
  38: ["ENOSYS", "function not implemented"],
  40: ["ELOOP", "too many levels of symbolic links"],
  71: ["EPROTO", "protocol error"],
  95: ["EOPNOTSUPP", "operation not supported"],
  97: ["EAFNOSUPPORT", "address family not supported by protocol"],
  99: ["EADDRNOTAVAIL", "cannot assign requested address"],
  101: ["ENETUNREACH", "network is unreachable"],
  104: ["ECONNRESET", "connection reset by peer"],
  110: ["ETIMEDOUT", "connection timed out"],
  111: ["ECONNREFUSED", "connection refused"],
  113: ["EHOSTUNREACH", "no route to host"],
  125: ["ECANCELED", "operation canceled"],
};

/** Errno numbers by name (`ERRNO.ENOENT === 2`), for the names in the table above. */
export const ERRNO: Readonly<Record<string, number>> = Object.fromEntries(
  Object.entries(NAMES).map(([number, [name]]) => [name, Number(number)]),
);

/** `EACCES`, or `errno 123` for numbers this table does not know. */
export function errnoName(errno: number): string {
  return NAMES[errno]?.[0] ?? `errno ${errno}`;
}

/** A short human description, e.g. `permission denied`. */
export function errnoText(errno: number): string {
  return NAMES[errno]?.[1] ?? `errno ${errno}`;
}
