/* model.c — the names of a phase's and a run's status (model.h). */
#include "model.h"

const char *phase_status_name(enum phase_status s)
{
    static const char *const names[] = {"ok", "errors", "deadline", "interrupted", "verify"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

const char *run_status_name(enum run_status s)
{
    static const char *const names[] = {"complete", "incomplete", "interrupted"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "partial";
}
