/* monitor_scope.h — which processes the monitor counts under
 * monitor_processes (the job key monitor_scope): every process of the name
 * on the monitor host ("host"), those in one namespace ("ns:PATH", PATH a
 * namespace file such as /proc/PID/ns/net or /run/netns/NAME), or those in
 * one cgroup or below it ("cgroup:PATH", PATH a cgroup directory, v1 or
 * v2). The value is checked by a pure function where the job is loaded;
 * the scope is opened where the monitor samples (its paths name that host's
 * processes and files), and each process is then tested by its PID. */
#ifndef HERD_MONITOR_SCOPE_H
#define HERD_MONITOR_SCOPE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

enum monitor_scope_kind { SCOPE_HOST, SCOPE_NS, SCOPE_CGROUP };

/* The kind of scope text names, with *path at its PATH inside text (NULL
 * for host); -1 with one line in why when text is not host, ns:PATH or
 * cgroup:PATH with PATH absolute. */
int monitor_scope_parse(const char *text, const char **path, char *why, size_t whylen);

/* monitor_scope_parse for the key table: NULL, or why. "" (the key
 * unset) is taken: monitor_scope_effective resolves it. */
const char *monitor_scope_check(const char *text, char *why, size_t whylen);

/* The scope a configured monitor_scope means: itself when set; unset (""),
 * the namespace of the embedded server herd runs beside when it runs
 * inside `nfs-server.sh exec` (which exports HERD_SERVER), so that another
 * server on the host is never counted as this one; else "host". */
#define MONITOR_SCOPE_BESIDE_SERVER "ns:/proc/self/ns/net"
const char *monitor_scope_effective(const char *configured);

/* Where a cgroup directory sits, as /proc/PID/cgroup names it. */
struct cgroup_place {
    bool v2;             /* the cgroup2 hierarchy: its line is "0::PATH" */
    char options[256];   /* v1: the hierarchy's mount options, its controllers among them */
    char path[PATH_MAX]; /* the cgroup within its hierarchy, "/" = the root */
};

/* The place of directory dir (a real path, no symbolic links) from the
 * text of /proc/self/mountinfo: the mount holding it must be a cgroup or
 * cgroup2 file system. 0, or -1 when it is on another file system or a
 * path does not fit. */
int monitor_cgroup_place(const char *mountinfo, size_t n, const char *dir,
                         struct cgroup_place *out);

/* Whether the text of /proc/PID/cgroup puts the process in place's cgroup
 * or in one below it. */
bool monitor_cgroup_member(const char *cgroup, size_t n, const struct cgroup_place *place);

/* A scope opened on the monitor host. NULL with one line in why ("monitor_scope
 * 'ns:/x': No such file or directory") when it cannot be used there. */
struct monitor_scope;
struct monitor_scope *monitor_scope_open(const char *text, char *why, size_t whylen);
/* Whether process pid (its /proc directory name) is in the scope: 1, 0,
 * or -errno when that cannot be told (-ENOENT: it exited; -EACCES: a
 * process of another user, whose namespaces herd may not look at). */
int monitor_scope_has(struct monitor_scope *s, const char *pid);
void monitor_scope_close(struct monitor_scope *s);

#endif
