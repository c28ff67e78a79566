/* textfile.c — reading a whole small regular file (textfile.h). */
#include "textfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
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

long textfile_read(const char *path, size_t max, char **buf, size_t *cap)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat sb;
    long rc = 0;
    if (fstat(fd, &sb) < 0)
        rc = -errno;
    else if (!S_ISREG(sb.st_mode))
        rc = S_ISDIR(sb.st_mode) ? -EISDIR : -ENOTSUP;
    else if ((uint64_t)sb.st_size > max)
        rc = -EFBIG;
    if (rc == 0)
        rc = textfile_read_fd(fd, max, buf, cap);
    close(fd);
    return rc;
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
