/* libnfs_window.c — the RPCs of one direction a rank's streams keep in
 * flight (libnfs_window.h): a fixed window, or one that tries 1, 2,
 * 4, ... up to its ceiling and back down and keeps the largest within
 * STREAM_WINDOW_TIE of the fastest; and each RPC's round trip counted
 * for the phase (rpc_observe). libnfs_stream.c sends by these windows. */
#include "libnfs_window.h"

#include "ops.h"

/* The index among the windows tried (0: 1, ntries - 1: max) of try
 * `step`: up, then back down. */
static unsigned stream_window_index(const struct stream_window *w, unsigned step)
{
    return step < w->ntries ? step : 2 * w->ntries - 1 - step;
}

/* The window at index i: 1, 2, 4, ..., then max. */
static unsigned stream_window_size(const struct stream_window *w, unsigned i)
{
    return i + 1 < w->ntries ? 1u << i : w->max;
}

/* Bytes per second of the window at index i over its tries so far. */
static double stream_window_rate(const struct stream_window *w, unsigned i)
{
    return w->tried_seconds[i] > 0 ? (double)w->tried_bytes[i] / w->tried_seconds[i] : 0;
}

void stream_window_init(struct stream_window *w, unsigned max, bool probe)
{
    *w = (struct stream_window){.max = max ? max : 1};
    /* 1, 2, 4, ... below max, at most STREAM_WINDOW_TRIES - 1 of them, then max. */
    while (w->ntries < STREAM_WINDOW_TRIES - 1 && (1u << w->ntries) < w->max)
        w->ntries++;
    w->ntries++; /* max itself */
    w->now = probe ? 1 : w->max;
    w->fill = w->now;
    w->settled = probe && w->max > 1 ? 0 : w->max;
}

void stream_window_resume(struct stream_window *w)
{
    w->answered = 0;
    w->paused = w->timed ? w->last - w->t0 : 0;
    w->fill = 1; /* timed from the phase's first reply: its round trip counts in no try */
}

unsigned stream_window_kept(const struct stream_window *w)
{
    if (!w->answered)
        return 0;
    return w->settled ? w->settled : w->now;
}

unsigned stream_window_reach(unsigned max, uint64_t replies)
{
    struct stream_window w;
    stream_window_init(&w, max, true);
    unsigned reached = 1;
    uint64_t used = 0;
    for (unsigned i = 0; i < w.ntries && used < replies; i++) {
        reached = stream_window_size(&w, i);
        unsigned sample = STREAM_WINDOW_SAMPLE * reached;
        used += reached + (sample < STREAM_WINDOW_MIN_REPLIES ? STREAM_WINDOW_MIN_REPLIES : sample);
    }
    return reached;
}

/* The largest window tried whose rate came within STREAM_WINDOW_TIE of
 * the fastest's. */
static unsigned stream_window_choose(const struct stream_window *w)
{
    double fastest = 0;
    for (unsigned i = 0; i < w->ntries; i++)
        if (stream_window_rate(w, i) > fastest)
            fastest = stream_window_rate(w, i);
    unsigned i = w->ntries - 1;
    while (i > 0 && stream_window_rate(w, i) * STREAM_WINDOW_TIE < fastest)
        i--;
    return stream_window_size(w, i);
}

/* The next try from `step` on that runs: every one up; down, only those
 * of windows whose first try came within STREAM_WINDOW_RETRY of the
 * fastest first try. 2 * ntries: none is left. */
static unsigned stream_window_next(const struct stream_window *w, unsigned step)
{
    while (step >= w->ntries && step < 2 * w->ntries &&
           stream_window_rate(w, stream_window_index(w, step)) * STREAM_WINDOW_RETRY <
               w->first_fastest)
        step++;
    return step;
}

void stream_window_reply(struct stream_window *w, size_t bytes, double t)
{
    if (!w)
        return;
    w->answered++;
    if (w->settled)
        return;
    w->last = t;
    if (w->fill) { /* the pipe filling after a change or a new phase */
        w->fill--;
        w->t0 = t - w->paused;
        return;
    }
    w->timed++;
    w->bytes += bytes;
    unsigned sample = STREAM_WINDOW_SAMPLE * w->now;
    if (sample < STREAM_WINDOW_MIN_REPLIES)
        sample = STREAM_WINDOW_MIN_REPLIES;
    if (w->timed < sample || t - w->t0 < STREAM_WINDOW_MIN_SECONDS)
        return;
    unsigned i = stream_window_index(w, w->step);
    w->tried_bytes[i] += w->bytes;
    w->tried_seconds[i] += t - w->t0;
    if (w->step < w->ntries && stream_window_rate(w, i) > w->first_fastest)
        w->first_fastest = stream_window_rate(w, i);
    w->step = stream_window_next(w, w->step + 1);
    if (w->step == 2 * w->ntries) {
        w->now = w->settled = stream_window_choose(w);
        return;
    }
    unsigned next = stream_window_size(w, stream_window_index(w, w->step));
    w->fill = next == w->now ? 0 : next;
    w->now = next;
    w->timed = 0;
    w->bytes = 0;
    w->paused = 0;
    w->t0 = t;
}

void rpc_observe(const struct rpc_observer *obs, bool write, double seconds)
{
    enum op op = write ? OP_RPC_WRITE : OP_RPC_READ;
    if (!obs || !obs->hist || !obs->count || !obs->seconds)
        return;
    hist_add(&obs->hist[op], seconds > 0 ? (uint64_t)(seconds * 1e9) : 0);
    obs->count[op]++;
    obs->seconds[op] += seconds;
}
