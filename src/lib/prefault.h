/* prefault.h — fault in heap pages before a phase's clock starts, so that
 * the phase's own buffers land on pages already touched.
 *
 * With freed memory kept in the process (prefault_keep_freed), blocks
 * allocated, touched and freed here are what the next allocations of
 * about that size reuse. On the development VM a first touch costs about
 * 16 us a 4 KiB page: a 1 MiB buffer first written inside a phase cost it
 * 4-6 ms (docs/performance.md). IOR and fio place and write their buffers
 * before their clocks; this lets herd's libraries do the same with
 * buffers it does not allocate itself. */
#ifndef HERD_PREFAULT_H
#define HERD_PREFAULT_H

#include <stddef.h>

/* Keep freed memory in the process for the next allocation instead of
 * giving it back to the kernel: allocations up to 32 MiB (glibc's largest
 * mmap threshold) come from the heap, which keeps up to 1 GiB free at its
 * top, so the process holds at most its peak use. The client libraries
 * allocate a buffer per RPC (libnfs a WRITE's encoded call and a READ's
 * reply, 1 MiB at rsize 1M); with glibc's defaults each was mapped anew
 * or trimmed off the heap once freed, and every RPC faulted in its pages
 * again: 256 page faults per MiB written, 0.6 of the CPU of a 1 MiB-RPC
 * copy and up to 2.9x its time (docs/performance.md). herd run calls it
 * before MPI starts. */
void prefault_keep_freed(void);

/* Allocate count blocks of size bytes plus PREFAULT_SLACK (room for an
 * allocator's header, an alignment, a protocol's header), touch each page
 * once, free them all. At most PREFAULT_MAX bytes in all; a block that
 * cannot be had ends it. Blocks past glibc's 32 MiB threshold are mapped
 * and unmapped: no use, so they are skipped. */
#define PREFAULT_SLACK (64u << 10)
#define PREFAULT_MAX (512u << 20)
void prefault_heap(size_t size, size_t count);

#endif
