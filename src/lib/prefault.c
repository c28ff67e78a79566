/* prefault.c — fault in heap pages before a phase's clock (prefault.h). */
#include "prefault.h"

#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#define PREFAULT_BLOCK_MAX (32u << 20) /* the heap's largest block: M_MMAP_THRESHOLD */

void prefault_keep_freed(void)
{
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
    mallopt(M_MMAP_THRESHOLD, PREFAULT_BLOCK_MAX);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

void prefault_heap(size_t size, size_t count)
{
    if (size == 0 || count == 0 || size > PREFAULT_BLOCK_MAX - PREFAULT_SLACK)
        return;
    size += PREFAULT_SLACK;
    if (count > PREFAULT_MAX / size)
        count = PREFAULT_MAX / size;
    void **blocks = calloc(count, sizeof *blocks);
    if (!blocks)
        return;
    long page = sysconf(_SC_PAGESIZE);
    size_t step = page > 0 ? (size_t)page : 4096;
    size_t n = 0;
    for (; n < count; n++) {
        blocks[n] = malloc(size);
        if (!blocks[n])
            break;
        /* One volatile store a page: a memset of memory freed next is a
         * dead store the compiler may drop (and calloc skips fresh pages). */
        for (size_t at = 0; at < size; at += step)
            ((volatile unsigned char *)blocks[n])[at] = 0;
    }
    while (n > 0)
        free(blocks[--n]);
    free(blocks);
}
