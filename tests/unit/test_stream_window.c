/* test_stream_window.c — unit tests for the RPC window's tries
 * (libnfs_window.h, nfs_inflight = 0): replies come from a model server
 * whose rate depends on the window only; the window must try 1, 2, 4, ...
 * up to its ceiling and back down (the windows near the fastest only),
 * each try long enough, and keep the largest window within
 * STREAM_WINDOW_TIE of the fastest; a fixed window never moves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "libnfs_window.h"

#define MIB (1u << 20)

/* The model server: MiB/s at windows 1, 2, 4, 8, 16. */
struct model {
    double rate[5];
};

static double model_rate(const struct model *m, unsigned window)
{
    unsigned i = 0;
    while ((1u << (i + 1)) <= window && i < 4)
        i++;
    return m->rate[i] * MIB;
}

/* A probing window of ceiling max fed replies of chunk bytes at the
 * model's rate for the window in force, until it settles (or 100000
 * replies): the windows tried, in order, and the replies it took. */
struct trial {
    struct stream_window w;
    unsigned tried[16], ntried, replies;
};

static void probe(struct trial *tr, const struct model *m, unsigned max, size_t chunk)
{
    double t = 100.0;
    *tr = (struct trial){0};
    stream_window_init(&tr->w, max, true);
    while (tr->replies < 100000 && !tr->w.settled) {
        if (tr->ntried == 0 || tr->tried[tr->ntried - 1] != tr->w.now)
            tr->tried[tr->ntried++] = tr->w.now;
        t += (double)chunk / model_rate(m, tr->w.now);
        stream_window_reply(&tr->w, chunk, t);
        tr->replies++;
    }
}

static void test_fixed_window_never_moves(void **state)
{
    (void)state;
    struct stream_window w;
    stream_window_init(&w, 8, false);
    assert_int_equal(w.now, 8);
    assert_int_equal(stream_window_kept(&w), 0); /* nothing answered yet */
    double t = 1.0;
    for (int i = 0; i < 1000; i++)
        stream_window_reply(&w, MIB, t += 0.001 * (i % 7 + 1));
    assert_int_equal(w.now, 8);
    assert_int_equal(stream_window_kept(&w), 8);
}

static void test_tries_every_window_and_keeps_the_peak(void **state)
{
    (void)state;
    struct model ganesha = {{1300, 700, 950, 600, 500}}; /* one WRITE at a time wins */
    struct trial tr;
    probe(&tr, &ganesha, 16, MIB);
    /* Up 1 2 4 8 16; down only the windows within 1.5x of 1's 1300 */
    static const unsigned order[] = {1, 2, 4, 8, 16, 4, 1};
    assert_int_equal(tr.ntried, 7);
    for (unsigned i = 0; i < 7; i++)
        assert_int_equal(tr.tried[i], order[i]);
    assert_int_equal(tr.w.settled, 1);
    assert_int_equal(tr.w.now, 1);
    assert_int_equal(stream_window_kept(&tr.w), 1);
}

/* A server flat from 1 to 8 that gains at 16 (the kernel's nfsd's WRITEs):
 * trying on past a window that did not pay finds it. */
static void test_a_late_gain_is_found(void **state)
{
    (void)state;
    struct model knfsd = {{165, 160, 162, 170, 214}};
    struct trial tr;
    probe(&tr, &knfsd, 16, 64 * 1024);
    assert_int_equal(tr.w.settled, 16);
    assert_int_equal(stream_window_kept(&tr.w), 16);
}

/* A slow link: each doubling doubles the rate, so the way back down
 * tries the ceiling alone (back to back: no fill), not 8, 4, 2 and 1,
 * each many round trips. */
static void test_slow_link_tries_only_the_ceiling_again(void **state)
{
    (void)state;
    struct model slow_link = {{3, 6, 12, 24, 48}};
    struct trial tr;
    probe(&tr, &slow_link, 16, 64 * 1024);
    assert_int_equal(tr.ntried, 5); /* 1 2 4 8 16, 16 again */
    assert_int_equal(tr.w.settled, 16);
    unsigned up = 0;
    for (unsigned i = 0; i < 5; i++) {
        unsigned n = STREAM_WINDOW_SAMPLE * (1u << i);
        up += (1u << i) + (n > STREAM_WINDOW_MIN_REPLIES ? n : STREAM_WINDOW_MIN_REPLIES);
    }
    assert_int_equal(tr.replies, up + STREAM_WINDOW_SAMPLE * 16);
}

/* The ceiling need not be a power of two: the last try is the ceiling.
 * The model gives 6 the rate of 4: a tie keeps the ceiling. */
static void test_ceiling_is_tried(void **state)
{
    (void)state;
    struct model rising = {{100, 200, 300, 400, 500}};
    struct trial tr;
    probe(&tr, &rising, 6, MIB);
    assert_int_equal(tr.ntried, 6); /* 1 2 4 6 4 2: 1 was 3x slower than 6 */
    assert_int_equal(tr.tried[3], 6);
    assert_int_equal(tr.w.settled, 6);
}

/* A server flat within STREAM_WINDOW_TIE keeps the ceiling, the same load
 * every run; one clearly faster at a smaller window gets the largest
 * window near its peak. */
static void test_flat_keeps_the_ceiling(void **state)
{
    (void)state;
    struct model flat = {{1000, 1050, 1080, 1040, 1000}}; /* 8 %: a tie */
    struct model beaten = {{1000, 1300, 1080, 1040, 1000}};
    struct model peak = {{1000, 1150, 1200, 1040, 1000}}; /* 2 and 4 tie: 4 */
    struct trial tr;
    probe(&tr, &flat, 16, MIB);
    assert_int_equal(tr.w.settled, 16);
    probe(&tr, &beaten, 16, MIB);
    assert_int_equal(tr.w.settled, 2);
    probe(&tr, &peak, 16, MIB);
    assert_int_equal(tr.w.settled, 4);
}

/* A rate that drifts while the window tries is met on the way up and on
 * the way down: a server flat across windows whose rate falls 1 % a
 * reply (44 % over the tries) keeps the ceiling; one pass up would have
 * timed 1 at 1.25 times 4's rate and kept 1. */
static void test_drift_favours_no_window(void **state)
{
    (void)state;
    struct stream_window w;
    stream_window_init(&w, 4, true);
    double t = 100.0, rate = 1000.0 * MIB;
    unsigned n = 0;
    while (!w.settled && n < 100000) {
        t += MIB / rate;
        rate *= 0.99;
        stream_window_reply(&w, MIB, t);
        n++;
    }
    assert_int_equal(w.settled, 4);
}

/* Each try lasts its window's fill, then at least STREAM_WINDOW_SAMPLE
 * windows' and STREAM_WINDOW_MIN_REPLIES replies and
 * STREAM_WINDOW_MIN_SECONDS: at 1 GiB/s of 4 KiB replies (4 us each) the
 * first try takes 10 ms, not 9 replies. */
static void test_a_try_lasts_long_enough(void **state)
{
    (void)state;
    struct model fast = {{1024, 1024, 1024, 1024, 1024}};
    struct trial tr;
    probe(&tr, &fast, 2, 4096); /* tries 1, 2, 2, 1 */
    unsigned n = tr.replies;
    double per_reply = 4096.0 / (1024.0 * MIB);
    unsigned min_per_try = (unsigned)(STREAM_WINDOW_MIN_SECONDS / per_reply);
    assert_true(n >= 4 * min_per_try);
    assert_true(n <= 4 * (min_per_try + 2 * 2 + 2)); /* not much longer either */

    /* Slow replies: STREAM_WINDOW_MIN_REPLIES of them decide each try,
     * after its window's fill (none between the ceiling's two). */
    struct model slow = {{1, 1, 1, 1, 1}};
    probe(&tr, &slow, 2, MIB);
    assert_int_equal(tr.replies, (1 + STREAM_WINDOW_MIN_REPLIES) + (2 + STREAM_WINDOW_MIN_REPLIES) +
                                     STREAM_WINDOW_MIN_REPLIES + (1 + STREAM_WINDOW_MIN_REPLIES));
}

/* While trying, the window kept is where the tries stand; a window of 1
 * has nothing to try; a NULL window is ignored. */
static void test_kept_while_trying_and_edges(void **state)
{
    (void)state;
    struct stream_window w;
    stream_window_init(&w, 4, true);
    assert_int_equal(w.settled, 0);
    double t = 1.0;
    for (int i = 0; i < 5; i++)
        stream_window_reply(&w, MIB, t += 0.01);
    assert_int_equal(stream_window_kept(&w), 1);
    stream_window_init(&w, 1, true);
    assert_int_equal(w.settled, 1);
    stream_window_reply(NULL, MIB, 2.0);
}

/* A probe that spans phases of `per_phase` replies, shorter than any
 * try, with 1000 s between them (stream_window_resume at each): it tries
 * the same windows in the same order as one long phase and keeps the
 * same window; the pauses count in no try. */
static void test_tries_go_on_across_phases(void **state)
{
    (void)state;
    struct model peak2 = {{100, 400, 200, 100, 100}};
    struct trial whole;
    probe(&whole, &peak2, 16, MIB);
    assert_int_equal(whole.w.settled, 2);

    struct trial tr = {0};
    double t = 100.0;
    const unsigned per_phase = 5;
    stream_window_init(&tr.w, 16, true);
    while (tr.replies < 100000 && !tr.w.settled) {
        if (tr.replies % per_phase == 0) {
            t += 1000.0;
            stream_window_resume(&tr.w);
        }
        if (tr.ntried == 0 || tr.tried[tr.ntried - 1] != tr.w.now)
            tr.tried[tr.ntried++] = tr.w.now;
        t += (double)MIB / model_rate(&peak2, tr.w.now);
        stream_window_reply(&tr.w, MIB, t);
        tr.replies++;
    }
    assert_int_equal(tr.w.settled, 2);
    assert_int_equal(tr.ntried, whole.ntried);
    for (unsigned i = 0; i < tr.ntried; i++)
        assert_int_equal(tr.tried[i], whole.tried[i]);
    double seconds = 0;
    for (unsigned i = 0; i < tr.w.ntries; i++)
        seconds += tr.w.tried_seconds[i];
    assert_true(seconds < 10.0); /* the model's time only, none of the 1000 s pauses */
}

/* A window kept stays kept in the next phase, which reports it once one
 * of its own RPCs is answered. */
static void test_a_kept_window_stays_for_the_next_phase(void **state)
{
    (void)state;
    struct model peak2 = {{100, 400, 200, 100, 100}};
    struct trial tr;
    probe(&tr, &peak2, 16, MIB);
    assert_int_equal(stream_window_kept(&tr.w), 2);
    stream_window_resume(&tr.w);
    assert_int_equal(stream_window_kept(&tr.w), 0);
    assert_int_equal(tr.w.now, 2);
    stream_window_reply(&tr.w, MIB, 5000.0);
    assert_int_equal(stream_window_kept(&tr.w), 2);
    assert_int_equal(tr.w.settled, 2);
}

/* stream_window_reach: the largest window a probe tries within its first
 * N replies is the probe's own, reply by reply, when its tries are long
 * in replies, not in time (replies 5 ms apart). */
static void test_reach_follows_the_probe(void **state)
{
    (void)state;
    static const unsigned ceilings[] = {1, 2, 4, 6, 16};
    for (unsigned c = 0; c < sizeof ceilings / sizeof ceilings[0]; c++) {
        struct stream_window w;
        stream_window_init(&w, ceilings[c], true);
        unsigned most = 0;
        double t = 1.0;
        for (uint64_t n = 1; n <= 400; n++) {
            most = w.now > most ? w.now : most; /* the window reply n is awaited at */
            assert_int_equal(stream_window_reach(ceilings[c], n), most);
            stream_window_reply(&w, MIB, t += 0.005);
        }
        assert_int_equal(most, ceilings[c]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_window_never_moves),
        cmocka_unit_test(test_reach_follows_the_probe),
        cmocka_unit_test(test_tries_every_window_and_keeps_the_peak),
        cmocka_unit_test(test_a_late_gain_is_found),
        cmocka_unit_test(test_slow_link_tries_only_the_ceiling_again),
        cmocka_unit_test(test_ceiling_is_tried),
        cmocka_unit_test(test_flat_keeps_the_ceiling),
        cmocka_unit_test(test_drift_favours_no_window),
        cmocka_unit_test(test_a_try_lasts_long_enough),
        cmocka_unit_test(test_kept_while_trying_and_edges),
        cmocka_unit_test(test_tries_go_on_across_phases),
        cmocka_unit_test(test_a_kept_window_stays_for_the_next_phase),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
