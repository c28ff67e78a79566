/* test_dirset.c — unit tests for dirset.c: adds, lookups and removals
 * against a plain array kept beside it, through growth and through
 * removals that must shift the entries after a hole back (colliding
 * identities on one device, identities on several devices). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "dirset.h"

#define N 3000

struct ref {
    dev_t dev;
    ino_t ino;
    bool in;
};

static void assert_same(const struct dirset *s, const struct ref *r, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(dirset_has(s, r[i].dev, r[i].ino), r[i].in);
        count += r[i].in;
    }
    assert_int_equal(s->count, count);
    assert_true(s->cap == 0 || 2 * s->count <= s->cap);
}

static void test_empty(void **state)
{
    (void)state;
    struct dirset s = {0};
    assert_false(dirset_has(&s, 1, 2));
    dirset_remove(&s, 1, 2); /* nothing to remove: no error */
    assert_int_equal(s.count, 0);
    assert_int_equal(dirset_add(&s, 1, 2), 0);
    assert_int_equal(dirset_add(&s, 1, 2), 0); /* twice: once in the set */
    assert_int_equal(s.count, 1);
    assert_false(dirset_has(&s, 2, 1));
    dirset_remove(&s, 1, 2);
    assert_false(dirset_has(&s, 1, 2));
    dirset_free(&s);
    assert_int_equal(s.cap, 0);
}

/* Random adds and removes over a small key space (many collisions and
 * many holes), checked against the reference after each batch. */
static void test_random(void **state)
{
    (void)state;
    static struct ref r[N];
    for (size_t i = 0; i < N; i++)
        r[i] = (struct ref){.dev = (dev_t)(i % 3), .ino = (ino_t)(i * 7919 % 100003)};
    struct dirset s = {0};
    srand(7);
    for (int round = 0; round < 40; round++) {
        for (int k = 0; k < 500; k++) {
            struct ref *e = &r[(size_t)rand() % N];
            if (rand() % 3) {
                assert_int_equal(dirset_add(&s, e->dev, e->ino), 0);
                e->in = true;
            } else {
                dirset_remove(&s, e->dev, e->ino);
                e->in = false;
            }
        }
        assert_same(&s, r, N);
    }
    /* Empty it in order, then it is empty for every key. */
    for (size_t i = 0; i < N; i++) {
        dirset_remove(&s, r[i].dev, r[i].ino);
        r[i].in = false;
    }
    assert_same(&s, r, N);
    dirset_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
