/* progress.h — rank 0's progress display on stderr: a bar on a terminal,
 * a line every few seconds in a batch log. Shows rank 0's own share. */
#ifndef HERD_PROGRESS_H
#define HERD_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct progress {
    const char *phase;
    uint64_t total, done;
    double t_begin, t_last;
    bool tty;
};

void progress_begin(struct progress *p, const char *phase, uint64_t total);
void progress_add(struct progress *p, uint64_t bytes);
void progress_end(struct progress *p);

#endif
