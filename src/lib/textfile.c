/* textfile.c — reading a whole small regular file, or a pipe the user
 * named (textfile.h). */
#include "textfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Make room for at least one more byte and the NUL, up to max + 2 (so that
 * a file of max + 1 bytes is seen). */
static int textfile_grow(char **buf, size_t *cap, size_t used, size_t max)
{
    if (*cap - used >= 2)
        return 0;
    size_t grown = *cap ? 2 * *cap : 4096;
    if (grown > max + 2)
        grown = max + 2;
    if (grown <= *cap)
        return -EFBIG;
    char *p = realloc(*buf, grown);
    if (!p)
        return -ENOMEM;
    *buf = p;
    *cap = grown;
    return 0;
}

/* fd is an anonymous pipe (its /proc link reads "pipe:[INODE]"), not a
 * FIFO with a name in a file system. */
static bool fd_is_anonymous_pipe(int fd)
{
    char link[64], target[32];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    return n > 5 && strncmp(target, "pipe:", 5) == 0;
}

/* Clear O_NONBLOCK on fd: 0 or -errno. */
static int fd_blocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ? -errno : 0;
}

static long textfile_open_read(const char *path, size_t max, char **buf, size_t *cap, bool pipes)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat sb;
    long rc = 0;
    if (fstat(fd, &sb) < 0)
        rc = -errno;
    else if (pipes && S_ISFIFO(sb.st_mode) && fd_is_anonymous_pipe(fd))
        rc = fd_blocking(fd); /* its writer is there: read it to its end */
    else if (!S_ISREG(sb.st_mode))
        rc = S_ISDIR(sb.st_mode) ? -EISDIR : -ENOTSUP;
    else if ((uint64_t)sb.st_size > max)
        rc = -EFBIG;
    if (rc == 0)
        rc = textfile_read_fd(fd, max, buf, cap);
    close(fd);
    return rc;
}

long textfile_read(const char *path, size_t max, char **buf, size_t *cap)
{
    return textfile_open_read(path, max, buf, cap, false);
}

long textfile_read_given(const char *path, size_t max, char **buf, size_t *cap)
{
    return textfile_open_read(path, max, buf, cap, true);
}

long textfile_read_fd(int fd, size_t max, char **buf, size_t *cap)
{
    size_t n = 0;
    long rc = 0;
    while (rc == 0) {
        rc = textfile_grow(buf, cap, n, max);
        if (rc < 0)
            break;
        ssize_t got = read(fd, *buf + n, *cap - n - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            rc = -errno;
        if (got <= 0)
            break;
        n += (size_t)got;
        if (n > max)
            rc = -EFBIG;
    }
    if (rc < 0)
        return rc;
    (*buf)[n] = '\0';
    return (long)n;
}
