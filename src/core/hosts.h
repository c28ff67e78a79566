/* hosts.h — what a rank can say about its host: name, and the mount that
 * holds the target (from /proc/self/mounts). */
#ifndef HERD_HOSTS_H
#define HERD_HOSTS_H

#include "model.h"

/* Fill hostname and the mount entry of the file system holding target
 * (empty mount fields when target is not a local path or not found). */
void hosts_describe(const char *target, struct host_info *out);

/* The /proc/self/mounts-format entry in `mounts` text whose mount point is
 * the longest prefix of `path`; 0 if found, -1 if none. (Split out so that
 * it can be tested on sample text.) */
int hosts_find_mount(const char *mounts_file, const char *path, struct host_info *out);

/* The read-ahead window in KiB of the file system holding path: the
 * read_ahead_kb of its backing device info (/sys/class/bdi/MAJ:MIN/,
 * an NFS mount's own anonymous device too); -1 when it cannot be read. */
int32_t hosts_read_ahead_kb(const char *path);

#endif
