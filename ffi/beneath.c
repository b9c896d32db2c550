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
#include <stdio.h> /* renameat */
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

/* Writes all of buf to fd; returns len or -errno. */
static long write_all(int fd, const uint8_t *buf, long len) {
  long off = 0;
  while (off < len) {
    ssize_t n = write(fd, buf + off, (size_t)(len - off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    off += n;
  }
  return off;
}

/* The old behaviour, for what a rename cannot replace faithfully: truncate and write in place. */
static long write_in_place(int rootfd, const char *rel, const uint8_t *buf, long len,
                           uint64_t resolve) {
  int fd = open_beneath(rootfd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_NOCTTY | O_NONBLOCK, 0644,
                        resolve);
  if (fd < 0) return fd;
  struct stat st;
  long r = fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ? -EINVAL : write_all(fd, buf, len);
  close(fd);
  return r;
}

/* Writes buf to a new file beside `name` in dirfd and renames it over `name`: a write that
 * fails part-way (the disk or quota full) leaves the old file whole. The temporary name is
 * made with O_EXCL, so nothing a sandbox planted under it is followed or reused. `mode` < 0:
 * a new file, 0644 under the process's umask; else the replaced file's permission bits. */
static long write_replacing(int dirfd, const char *name, const uint8_t *buf, long len,
                            int mode) {
  static unsigned counter;
  char tmp[64];
  int fd = -EEXIST;
  for (int attempt = 0; attempt < 8 && fd == -EEXIST; attempt++) {
    unsigned long n = ((unsigned long)getpid() << 20) ^ (unsigned long)++counter;
    int i = 0;
    for (const char *p = ".coop-write-"; *p; p++) tmp[i++] = *p;
    for (int shift = 60; shift >= 0; shift -= 4) tmp[i++] = "0123456789abcdef"[(n >> shift) & 15];
    tmp[i] = 0;
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644);
    if (fd < 0) fd = -errno;
  }
  if (fd < 0) return fd;
  long r = mode >= 0 && fchmod(fd, (mode_t)mode) < 0 ? -errno : write_all(fd, buf, len);
  if (close(fd) < 0 && r >= 0) r = -errno;
  if (r >= 0 && renameat(dirfd, tmp, dirfd, name) < 0) r = -errno;
  if (r < 0) unlinkat(dirfd, tmp, 0);
  return r;
}

/* Creates or replaces rel beneath root (making missing parents) with len bytes. With
 * no_symlinks, no component of rel may be a symlink (-ELOOP).
 *
 * A new file, or a writable regular file of the gateway's own with one link, is written whole
 * beside it and renamed over it (its mode kept), so a write that fails leaves the old file
 * whole. Through a symlink (the owner's), a file with other hard links, one another uid owns or
 * a read-only one, it is written in place as before: a rename would change what those see, or
 * write what the gateway could not; so it is when there is no room for both copies, or the
 * directory is not the gateway's to write in. */
long coop_write_beneath(const char *root, const char *rel, const uint8_t *buf, long len,
                        int no_symlinks) {
  uint64_t resolve = BENEATH | (no_symlinks ? RESOLVE_NO_SYMLINKS : 0);
  int rootfd = open_root(root);
  if (rootfd < 0) return rootfd;
  long r = make_parents(rootfd, rel, resolve);
  if (r) {
    close(rootfd);
    return r;
  }
  /* The directory that holds the file, pinned beneath the root, and the file's name in it. */
  char dir[4096];
  size_t length = strlen(rel);
  if (length >= sizeof dir) {
    close(rootfd);
    return -ENAMETOOLONG;
  }
  memcpy(dir, rel, length + 1);
  char *slash = strrchr(dir, '/');
  const char *name = slash ? slash + 1 : rel;
  int dirfd = rootfd;
  if (slash) {
    *slash = 0;
    dirfd = open_beneath(rootfd, dir, O_PATH | O_DIRECTORY, 0, resolve);
    if (dirfd < 0) {
      close(rootfd);
      return dirfd;
    }
  }
  if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
    r = -EISDIR;
  } else {
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      r = errno == ENOENT ? write_replacing(dirfd, name, buf, len, -1) : -errno;
    } else if (S_ISLNK(st.st_mode)) {
      r = no_symlinks ? -ELOOP : write_in_place(rootfd, rel, buf, len, resolve);
    } else if (S_ISDIR(st.st_mode)) {
      r = -EISDIR;
    } else if (!S_ISREG(st.st_mode)) {
      r = -EINVAL; /* a fifo or device planted by the sandbox would block or worse */
    } else if (st.st_nlink > 1 || st.st_uid != geteuid() || !(st.st_mode & S_IWUSR)) {
      r = write_in_place(rootfd, rel, buf, len, resolve);
    } else {
      /* Never a set-id bit: no file under a workspace carries one (ATTACKS F26). */
      r = write_replacing(dirfd, name, buf, len, st.st_mode & 0777);
      /* No room for both copies (a workspace near its disk_quota, whose check counted only the
       * difference: in place frees the old blocks first), or a directory the gateway may not
       * write in (the file itself it may): in place, as before. */
      if (r == -ENOSPC || r == -EDQUOT || r == -EACCES)
        r = write_in_place(rootfd, rel, buf, len, resolve);
    }
  }
  if (dirfd != rootfd) close(dirfd);
  close(rootfd);
  return r;
}
