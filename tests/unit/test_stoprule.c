/* test_stoprule.c — unit tests for stoprule.c: the grammar (metrics,
 * comparisons, units, "or"), the refusals with their reasons, which
 * condition a step's figures break, and NaN breaking none. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "stoprule.h"

static void no_values(double v[STOP_METRICS])
{
    for (int i = 0; i < STOP_METRICS; i++)
        v[i] = NAN;
}

static void test_parse(void **state)
{
    (void)state;
    struct stop_rule r;
    char why[256];
    assert_null(stoprule_parse("p99 > 50ms or achieved < 95%", &r, why, sizeof why));
    assert_int_equal(r.n, 2);
    assert_int_equal(r.cond[0].metric, STOP_P99);
    assert_int_equal(r.cond[0].cmp, STOP_GT);
    assert_true(fabs(r.cond[0].value - 0.05) < 1e-12);
    assert_int_equal(r.cond[1].metric, STOP_ACHIEVED);
    assert_true(fabs(r.cond[1].value - 0.95) < 1e-12);
    assert_null(stoprule_parse("max>=1.5s", &r, why, sizeof why));
    assert_int_equal(r.cond[0].cmp, STOP_GE);
    assert_true(r.cond[0].value == 1.5);
    assert_null(stoprule_parse("errors > 0 or late >= 10% or p50 > 800us", &r, why, sizeof why));
    assert_int_equal(r.n, 3);
    assert_true(fabs(r.cond[2].value - 800e-6) < 1e-15);
    assert_null(stoprule_parse("", &r, why, sizeof why));
    assert_int_equal(r.n, 0);
    assert_true(stoprule_uses(&(struct stop_rule){1, {{STOP_LATE, STOP_GT, 0.1}}}, STOP_LATE));
}

static void test_refused(void **state)
{
    (void)state;
    static const struct {
        const char *text, *words;
    } bad[] = {
        {"p99", "does not start with p50"},
        {"latency > 5ms", "does not start with p50"},
        {"p99 = 5ms", "a comparison (>, >=, <, <=) must follow p99"},
        {"p99 > 5", "p99 needs a duration"},
        {"p99 > fast", "p99 needs a duration"},
        {"achieved < 95", "achieved needs a percent"},
        {"achieved < 150%", "achieved needs a percent"},
        {"errors > 1.5", "errors needs a whole count"},
        {"p99 > 5ms or", "is not METRIC OP VALUE"},
        {"p99 > 5ms or or p50 > 1ms", "does not start with p50"},
        {"p50 > 1ms or p50 > 1ms or p50 > 1ms or p50 > 1ms or p50 > 1ms", "more than 4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct stop_rule r;
        char why[256] = "";
        if (!stoprule_parse(bad[i].text, &r, why, sizeof why))
            fail_msg("'%s' accepted", bad[i].text);
        if (!strstr(why, bad[i].words))
            fail_msg("'%s': '%s' lacks '%s'", bad[i].text, why, bad[i].words);
    }
}

static void test_broken(void **state)
{
    (void)state;
    struct stop_rule r;
    char why[256], text[96];
    assert_null(stoprule_parse("p99 > 50ms or achieved < 95%", &r, why, sizeof why));
    double v[STOP_METRICS];
    no_values(v);
    assert_int_equal(stoprule_broken(&r, v), -1); /* no figures: nothing broken */
    v[STOP_P99] = 0.040;
    v[STOP_ACHIEVED] = 0.97;
    assert_int_equal(stoprule_broken(&r, v), -1);
    v[STOP_ACHIEVED] = 0.904;
    assert_int_equal(stoprule_broken(&r, v), 1);
    stoprule_describe(&r, 1, v, text, sizeof text);
    assert_string_equal(text, "achieved 90.4% < 95.0%");
    v[STOP_P99] = 0.0612;
    assert_int_equal(stoprule_broken(&r, v), 0); /* the first broken one */
    stoprule_describe(&r, 0, v, text, sizeof text);
    assert_string_equal(text, "p99 61.2ms > 50ms");
    assert_null(stoprule_parse("errors >= 1", &r, why, sizeof why));
    v[STOP_ERRORS] = 0;
    assert_int_equal(stoprule_broken(&r, v), -1);
    v[STOP_ERRORS] = 1;
    assert_int_equal(stoprule_broken(&r, v), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_broken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
