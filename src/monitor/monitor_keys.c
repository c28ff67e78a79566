/* monitor_keys.c — the monitor's job-file keys and their rules
 * (monitor_keys.h). */
#include <stdio.h>
#include <string.h>

#include "monitor_keys.h"
#include "monitor_scope.h"

JOB_KEY_ROWS_BEGIN
const struct job_key monitor_keys[] = {
    {"monitor_host", KEY_STRING, PHASE_MEMBER(monitor_host), NULL, "",
     "[global] only: host name (as ranks report it) of the file server in the MPI "
     "hostfile; its ranks do no I/O, the lowest samples its CPU, memory, nfsd and disks",
     .scope = KEY_GLOBAL_ONLY},
    {"monitor_rank", KEY_STRING, PHASE_MEMBER(monitor_rank), NULL, "",
     "[global] only: last | a rank number: that one rank samples its host instead of "
     "doing I/O (when the server runs one rank)",
     .scope = KEY_GLOBAL_ONLY},
    {"monitor_interval", KEY_DURATION, PHASE_MEMBER(monitor_interval), NULL, "1s",
     "[global] only: seconds between monitor samples and node_exporter scrapes",
     .scope = KEY_GLOBAL_ONLY, .bounds = KEY_MIN, .min = 0.01},
    {"monitor_processes", KEY_STRING, PHASE_MEMBER(monitor_processes), NULL, "ganesha.nfsd,nfsd",
     "[global] only: command names whose CPU and RSS the monitor records "
     "(kernel nfsd threads included)",
     .scope = KEY_GLOBAL_ONLY},
    {"monitor_scope", KEY_STRING, PHASE_MEMBER(monitor_scope), NULL, "",
     "[global] only: which monitor_processes count (unset: host, or inside nfs-server.sh "
     "exec " MONITOR_SCOPE_BESIDE_SERVER ", the embedded server's): host (all on the monitor "
     "host) | "
     "ns:PATH (those in the namespace of file PATH: /proc/PID/ns/net, /run/netns/NAME) | "
     "cgroup:PATH (those in cgroup directory PATH or below it); paths of the monitor host",
     .scope = KEY_GLOBAL_ONLY, .check = monitor_scope_check},
    {"monitor_disks", KEY_STRING, PHASE_MEMBER(monitor_disks), NULL, "",
     "[global] only: block devices the monitor records, by name (sdb, loop0) or by a "
     "path on the monitor host (the exported directory)",
     .scope = KEY_GLOBAL_ONLY},
    {"monitor_url", KEY_STRING, PHASE_MEMBER(monitor_url), NULL, "",
     "[global] only: node_exporter metrics URL scraped by rank 0 every "
     "monitor_interval (http://HOST:9100/metrics)",
     .scope = KEY_GLOBAL_ONLY},
};
JOB_KEY_ROWS_END
const size_t monitor_nkeys = sizeof monitor_keys / sizeof monitor_keys[0];

const char *monitor_phase_check(const struct phase *ph, char *why, size_t len)
{
    if (ph->monitor_host[0] && ph->monitor_rank[0]) {
        snprintf(why, len, "set monitor_host or monitor_rank, not both");
        return "monitor_rank";
    }
    if (ph->monitor_rank[0] && strcmp(ph->monitor_rank, "last") != 0 &&
        (strspn(ph->monitor_rank, "0123456789") != strlen(ph->monitor_rank) ||
         strlen(ph->monitor_rank) > 7)) {
        snprintf(why, len, "'%s' is not last or a rank number (below %d)", ph->monitor_rank,
                 JOB_RANKS_MAX);
        return "monitor_rank";
    }
    if (ph->monitor_url[0] && strncmp(ph->monitor_url, "http://", 7) != 0 &&
        strncmp(ph->monitor_url, "https://", 8) != 0) {
        snprintf(why, len, "'%s' is not an http:// or https:// URL", ph->monitor_url);
        return "monitor_url";
    }
#ifndef HERD_HAVE_CURL
    if (ph->monitor_url[0]) {
        snprintf(why, len, "this herd was built without libcurl");
        return "monitor_url";
    }
#endif
    return NULL;
}

bool monitor_host_matches(const char *hostname, const char *want)
{
    size_t a = strcspn(hostname, "."), b = strcspn(want, ".");
    return strcmp(hostname, want) == 0 ||
           (a == b && strncmp(hostname, want, a) == 0 && (hostname[a] == '\0' || want[b] == '\0'));
}
