/* progress.c — rank 0's progress on stderr: a redrawn bar on a terminal,
 * otherwise one line every PROGRESS_LOG_EVERY seconds for batch logs. */
#include "progress.h"

#include <stdio.h>
#include <unistd.h>

#include "clock.h"
#include "units.h"

#define PROGRESS_TTY_EVERY 0.2
#define PROGRESS_LOG_EVERY 10.0

void progress_begin(struct progress *p, const char *phase, uint64_t total)
{
    p->phase = phase;
    p->total = total;
    p->done = 0;
    p->t_begin = p->t_last = clock_mono();
    p->tty = isatty(STDERR_FILENO);
}

static void progress_show(struct progress *p, double now, bool final)
{
    double frac = p->total ? (double)p->done / (double)p->total : 1.0;
    if (frac > 1.0)
        frac = 1.0;
    double elapsed = now - p->t_begin;
    char done[32];
    units_format_human((double)p->done, done, sizeof done);
    double rate = elapsed > 0 ? (double)p->done / elapsed / 1048576.0 : 0.0;
    if (p->tty) {
        char bar[31];
        int fill = (int)(frac * 30);
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r%-16s [%s] %3.0f%% rank 0: %s %.1f MiB/s %.1fs%s", p->phase, bar,
                frac * 100, done, rate, elapsed, final ? "\n" : "");
    } else if (!final) {
        fprintf(stderr, "herd: %s: rank 0 %.0f%% (%s, %.1f MiB/s) after %.0fs\n", p->phase,
                frac * 100, done, rate, elapsed);
    }
    fflush(stderr);
}

void progress_add(struct progress *p, uint64_t bytes)
{
    p->done += bytes;
    double now = clock_mono();
    if (now - p->t_last >= (p->tty ? PROGRESS_TTY_EVERY : PROGRESS_LOG_EVERY)) {
        p->t_last = now;
        progress_show(p, now, false);
    }
}

void progress_end(struct progress *p)
{
    if (p->tty)
        progress_show(p, clock_mono(), true);
}
