/* localerr.c — a connection's failure on this host (localerr.h). */
#include "localerr.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Why a socket cannot be opened now: socket()'s errno, or EMFILE when
 * one can (the likeliest cause of the failure that was, now passed). */
static int localerr_socket(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    close(fd);
    return -EMFILE;
}

int localerr_of(const char *msg)
{
    if (!msg)
        return 0;
    if (strstr(msg, "Failed to open socket") || strstr(msg, "Failed to create UDP socket"))
        return localerr_socket();
    if (strstr(msg, "Out of memory") || strstr(msg, "Failed to allocate") ||
        strstr(msg, "Failed to malloc"))
        return -ENOMEM;
    return 0;
}
