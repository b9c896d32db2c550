/* File access confined to a directory, for the gateway's file tools (src/sandbox/beneath.ts).
 *
 * The tools run on the host on behalf of sandboxed users, whose sandboxes can change the very
 * directory being accessed at any moment: a check-then-open in TypeScript can be raced by a
 * symlink swap. openat2(RESOLVE_BENEATH) makes the kernel refuse, atomically, any resolution
 * that would leave the root (absolute symlinks, "..", magic links), so there is no window. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BENEATH (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)

static int open_root(const char *root) {
  /* The root itself is the gateway's configured path (its parents are the owner's). */
  int fd = open(root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

/* resolve: BENEATH, or BENEATH | RESOLVE_NO_SYMLINKS for writes on behalf of a non-owner (a
 * symlink they planted could otherwise lead a write into a path the name check allowed). */
static int open_beneath(int rootfd, const char *rel, int flags, int mode, uint64_t resolve) {
  struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC), .mode = 0, .resolve = resolve};
  if (flags & O_CREAT) how.mode = (uint64_t)mode;
  int fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof how);
  return fd < 0 ? -errno : fd;
}

/* mkdir -p of rel's parent directories, each created beneath the root. */
static int make_parents(int rootfd, const char *rel, uint64_t resolve) {
  char path[4096];
  size_t len = strlen(rel);
  if (len >= sizeof path) return -ENAMETOOLONG;
  memcpy(path, rel, len + 1);
  for (char *slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/')) {
    *slash = 0;
    char *name = strrchr(path, '/'); /* path is now one directory; name its last part */
    int parent = rootfd;
    if (name) {
      *name = 0;
      parent = open_beneath(rootfd, path, O_PATH | O_DIRECTORY, 0, resolve);
      *name = '/';
      if (parent < 0) {
        *slash = '/';
        return parent;
      }
    }
    int r = mkdirat(parent, name ? name + 1 : path, 0755) < 0 && errno != EEXIST ? -errno : 0;
    if (name) close(parent);
    *slash = '/';
    if (r) return r;
  }
  return 0;
}

/* Reads the regular file rel beneath root into buf (cap bytes). Returns the bytes read;
 * -EFBIG when the file is larger than cap (*size says how large); -EISDIR, -ENOENT, -EXDEV
 * (the path leaves the root), -ELOOP, -EACCES… otherwise. */
long coop_read_beneath(const char *root, const char *rel, uint8_t *buf, long cap, int64_t *size) {
  int rootfd = open_root(root);
  if (rootfd < 0) return rootfd;
  int fd = open_beneath(rootfd, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, BENEATH);
  close(rootfd);
  if (fd < 0) return fd;
  struct stat st;
  long r;
  if (fstat(fd, &st) < 0) {
    r = -errno;
  } else if (S_ISDIR(st.st_mode)) {
    r = -EISDIR;
  } else if (!S_ISREG(st.st_mode)) {
    r = -EINVAL; /* a fifo or device planted by the sandbox would block or worse */
  } else if ((*size = st.st_size) > cap) {
    r = -EFBIG;
  } else {
    r = 0;
    while (r < cap) {
      ssize_t n = read(fd, buf + r, (size_t)(cap - r));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        r = -errno;
        break;
      }
      if (n == 0) break;
      r += n;
    }
  }
  close(fd);
  return r;
}

/* Creates or truncates rel beneath root (making missing parents) and writes len bytes. With
 * no_symlinks, no component of rel may be a symlink (-ELOOP). */
long coop_write_beneath(const char *root, const char *rel, const uint8_t *buf, long len,
                        int no_symlinks) {
  uint64_t resolve = BENEATH | (no_symlinks ? RESOLVE_NO_SYMLINKS : 0);
  int rootfd = open_root(root);
  if (rootfd < 0) return rootfd;
  int r = make_parents(rootfd, rel, resolve);
  int fd = r ? r
             : open_beneath(rootfd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_NOCTTY | O_NONBLOCK,
                            0644, resolve);
  close(rootfd);
  if (fd < 0) return fd;
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return -EINVAL;
  }
  long off = 0;
  while (off < len) {
    ssize_t n = write(fd, buf + off, (size_t)(len - off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      off = -errno;
      break;
    }
    off += n;
  }
  close(fd);
  return off;
}
