/* test_prefault.c — unit tests for prefault.c: with freed memory kept
 * (prefault_keep_freed, as herd run sets it), buffers allocated after
 * prefault_heap land on pages it touched, so writing them takes no page
 * faults; the same allocations without it take one a page (the control
 * that shows the count sees them). Page faults are counted with
 * getrusage; under AddressSanitizer (its own allocator) they are skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "prefault.h"

#if defined(__SANITIZE_ADDRESS__)
#define HERD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HERD_ASAN 1
#endif
#endif

#define MIB (1u << 20)
#define BLOCKS 3

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* Allocate BLOCKS buffers as the phase would (a slot, a 4 KiB-aligned
 * read buffer, a reply a little over a MiB), write every byte; returns
 * the page faults that took. */
static long write_buffers(void *b[BLOCKS])
{
    long before = minor_faults();
    b[0] = malloc(MIB);
    b[1] = aligned_alloc(4096, MIB);
    b[2] = malloc(MIB + 132);
    for (int i = 0; i < BLOCKS; i++) {
        assert_non_null(b[i]);
        memset(b[i], 0x5a, MIB);
    }
    return minor_faults() - before;
}

static void test_buffers_reuse_primed_pages(void **state)
{
    (void)state;
#ifdef HERD_ASAN
    skip();
#endif
    prefault_keep_freed();
    long before = minor_faults();
    prefault_heap(MIB, BLOCKS);
    long primed = minor_faults() - before;
    void *b[BLOCKS];
    long in_phase = write_buffers(b);
    void *c[BLOCKS]; /* the control: more of the same, no priming */
    long unprimed = write_buffers(c);
    for (int i = 0; i < BLOCKS; i++) {
        free(b[i]);
        free(c[i]);
    }
    long pages = BLOCKS * (long)(MIB / 4096);
    assert_true(primed >= pages);        /* it touched them, the stores were kept */
    assert_true(unprimed >= pages / 2);  /* the count sees first touches */
    assert_true(in_phase <= pages / 16); /* and the primed ones took (almost) none */
}

static void test_absurd_sizes_do_nothing(void **state)
{
    (void)state;
    long before = minor_faults();
    prefault_heap(0, 3);
    prefault_heap(MIB, 0);
    prefault_heap(SIZE_MAX, 3);  /* past the heap's largest block */
    prefault_heap(64u << 20, 1); /* likewise: it would be mapped and unmapped */
    assert_true(minor_faults() - before < 64);
    prefault_heap(4096, SIZE_MAX); /* capped at PREFAULT_MAX in all, not SIZE_MAX blocks */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffers_reuse_primed_pages),
        cmocka_unit_test(test_absurd_sizes_do_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
