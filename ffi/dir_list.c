/* Bounded directory reads for the gateway's event loop: a listing (src/sandbox/protected_paths.ts)
 * and the size of a small tree (src/sandbox/tree_usage.ts).
 *
 * A sandbox decides how many entries its workspace's top has; listing 800,000 of them on the
 * event loop stalled every other user (ATTACKS R12). This reads at most one caller-sized
 * buffer of getdents64 records, never the whole directory: a listing that does not fit is
 * answered -E2BIG and the caller moves the work to a worker thread. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Fills buf with the linux_dirent64 records of path's entries ("." and ".." included).
 * Returns the bytes used when the whole directory fit, -E2BIG when it did not, or -errno. */
int64_t coop_list_dir(const char *path, uint8_t *buf, int64_t len) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  long used = syscall(SYS_getdents64, fd, buf, (size_t)len);
  int64_t result = used < 0 ? -errno : used;
  if (used > 0) {
    /* One more call says whether anything is left. The probe holds one record of the
     * longest name (19 + 256 bytes, aligned); a record that does not fit is EINVAL: more. */
    uint8_t probe[288];
    long more = syscall(SYS_getdents64, fd, probe, sizeof probe);
    if (more != 0) result = -E2BIG;
  }
  close(fd);
  return result;
}

/* The accounting disk quota's measurement of a small workspace, on the event loop
 * (src/sandbox/tree_usage.ts): what src/sandbox/workspace_usage.ts measures — every entry
 * below path, no symlink followed, each inode once, allocated blocks — but bounded, so a
 * workspace a sandbox made large costs the event loop at most `limit` entries before the
 * caller hands the walk to a worker thread. Directories are opened relative to their parent
 * with O_NOFOLLOW, so a directory swapped for a symlink meanwhile is not entered. */

#define TREE_PENDING_MAX 64
#define TREE_LINKS_MAX 1024

struct tree_link {
  dev_t dev;
  ino_t ino;
};

/* out[0] = allocated bytes (path itself included), out[1] = entries below it. Returns 0 when
 * the walk is complete, 1 when it stopped at `limit` entries, -E2BIG when more directories
 * were pending or more hard-linked files seen than it holds, or -errno when path itself
 * cannot be looked at. A directory that cannot be opened holds nothing it could count. */
int64_t coop_tree_usage(const char *path, int64_t limit, int64_t *out) {
  struct stat st;
  if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0) return -errno;
  int64_t bytes = (int64_t)st.st_blocks * 512, inodes = 0, result = 0;
  int pending[TREE_PENDING_MAX];
  int depth = 0;
  struct tree_link links[TREE_LINKS_MAX];
  int nlinks = 0;
  int top = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top >= 0) pending[depth++] = top;
  uint8_t buf[16384];
  while (depth > 0 && result == 0) {
    int dir = pending[--depth];
    long used;
    while (result == 0 && (used = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
      for (long at = 0; at < used && result == 0;) {
        /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name. */
        unsigned short reclen = *(unsigned short *)(buf + at + 16);
        const char *name = (const char *)(buf + at + 19);
        at += reclen;
        if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue; /* gone meanwhile */
        if (st.st_nlink > 1 && !S_ISDIR(st.st_mode)) {
          int seen = 0;
          for (int i = 0; i < nlinks && !seen; i++)
            seen = links[i].dev == st.st_dev && links[i].ino == st.st_ino;
          if (seen) continue;
          if (nlinks == TREE_LINKS_MAX) {
            result = -E2BIG;
            break;
          }
          links[nlinks++] = (struct tree_link){st.st_dev, st.st_ino};
        }
        bytes += (int64_t)st.st_blocks * 512;
        if (++inodes >= limit) {
          result = 1;
          break;
        }
        if (!S_ISDIR(st.st_mode)) continue;
        int sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) continue;
        if (depth == TREE_PENDING_MAX) {
          close(sub);
          result = -E2BIG;
          break;
        }
        pending[depth++] = sub;
      }
    }
    close(dir);
  }
  while (depth > 0) close(pending[--depth]);
  out[0] = bytes;
  out[1] = inodes;
  return result;
}

/* 1 when path is the root of a mount (statx's STATX_ATTR_MOUNT_ROOT, path itself not
 * followed), 0 when it is not, -ENOSYS when the kernel does not say (before 5.8), -errno. */
int32_t coop_mount_root(const char *path) {
  struct statx stx;
  if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, 0, &stx) < 0) return -errno;
  if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)) return -ENOSYS;
  return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) ? 1 : 0;
}
