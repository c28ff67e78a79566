/* libnfs_window.h — how many READ or WRITE RPCs a rank's streams keep
 * in flight (libnfs_stream.h): a fixed window, or one probed once per
 * run; and where each RPC's round trip is counted (the phase's
 * OP_RPC_READ / OP_RPC_WRITE histograms and counts). */
#ifndef HERD_LIBNFS_WINDOW_H
#define HERD_LIBNFS_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"

/* Where RPC round trips are counted: arrays indexed by enum op (ops.h),
 * the running phase's; any pointer NULL: not counted. */
struct rpc_observer {
    struct hist *hist;
    uint64_t *count;
    double *seconds;
};

/* One READ (write: WRITE) RPC's round trip of seconds into obs (NULL, or
 * any array NULL: not counted). */
void rpc_observe(const struct rpc_observer *obs, bool write, double seconds);

/* The bytes a reply carried of a call of len bytes: err, libnfs's count
 * (or -errno), capped at len; 0 for an error or an empty reply. */
static inline size_t rpc_reply_bytes(int err, size_t len)
{
    if (err <= 0)
        return 0;
    return (size_t)err < len ? (size_t)err : len;
}

/* The RPCs of one direction (READ or WRITE) a rank's streams keep in
 * flight, shared by its files. Fixed: max. Probing (nfs_inflight = 0):
 * the window tries 1, 2, 4, ... up to max, then the same windows down
 * again (max, ..., 2, 1: a rate that drifts while trying favours none;
 * a window whose first try was more than STREAM_WINDOW_RETRY times
 * slower than the fastest first try is not tried again), and keeps the
 * largest window whose bytes per second over its tries came within
 * STREAM_WINDOW_TIE of the fastest's. So a server whose rate
 * is flat across windows gets max, the same load every run, and one that
 * serves fewer RPCs in flight clearly faster gets fewer. Each try: after
 * a change of window the first `now` replies fill the pipe, then
 * STREAM_WINDOW_SAMPLE windows' worth of replies (at least
 * STREAM_WINDOW_MIN_REPLIES, and for at least STREAM_WINDOW_MIN_SECONDS)
 * are timed; max's two tries run back to back, without a fill between.
 * On a slow link, where each doubling doubles the rate, only max is
 * tried twice: the way back costs no round trips at small windows.
 * `settled` is the window kept (0 while probing). A window lives as long
 * as its rank's connection: the next phase goes on with it
 * (stream_window_resume), so the tries run once per run, not per phase. */
#define STREAM_WINDOW_SAMPLE 2
#define STREAM_WINDOW_MIN_REPLIES 8
#define STREAM_WINDOW_MIN_SECONDS 0.01
#define STREAM_WINDOW_TIE 1.10
#define STREAM_WINDOW_RETRY 1.5
#define STREAM_WINDOW_TRIES 8 /* windows one probe can try: 1, 2, ..., 64, max */
struct stream_window {
    unsigned now, max, settled;
    uint64_t answered; /* replies with bytes since the phase began */
    unsigned fill;     /* untimed replies still to come: the pipe filling */
    unsigned timed;    /* the try's timed replies, in this phase and earlier ones */
    uint64_t bytes;    /* their bytes */
    /* When the try's timing began, moved on by the pauses between phases
     * (which count in no try); the last reply; at a new phase, the try's
     * seconds so far. */
    double t0, last, paused;
    unsigned step;   /* the try under way: 0 .. 2 * ntries - 1 */
    unsigned ntries; /* windows to try: 1, 2, 4, ... below max, then max */
    uint64_t tried_bytes[STREAM_WINDOW_TRIES]; /* per window, both tries */
    double tried_seconds[STREAM_WINDOW_TRIES];
    double first_fastest; /* bytes per second: the fastest try on the way up */
};

/* A window of max (>= 1) RPCs, fixed or probing. */
void stream_window_init(struct stream_window *w, unsigned max, bool probe);

/* A reply of bytes (> 0) came at time t (seconds, monotonic; w NULL:
 * nothing): time the window, and when its try is complete, double it or
 * settle. */
void stream_window_reply(struct stream_window *w, size_t bytes, double t);

/* A new phase goes on with w: a window kept stays kept; a probe goes on
 * with the try it was in, whose timed replies so far still count, timed
 * again from the phase's first reply on (the time between the phases and
 * the first round trip count in no try; a phase shorter than a try still
 * moves the tries on). stream_window_kept counts the new phase's replies
 * only. */
void stream_window_resume(struct stream_window *w);

/* The window w kept: settled, else where the probe stands; 0 when no
 * RPC of its direction was answered in this phase. */
unsigned stream_window_kept(const struct stream_window *w);

/* The largest window a probe up to max tries within its first `replies`
 * replies (each try: its fill, then its timed replies; a try's
 * STREAM_WINDOW_MIN_SECONDS left out: where replies come faster, a try
 * takes more of them and the probe is at this window or below): the most
 * a short run's RPCs have in flight, for the memory a client is
 * estimated to take (libnfs_budget.h). */
unsigned stream_window_reach(unsigned max, uint64_t replies);

#endif
