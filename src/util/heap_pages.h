/* How malloc's heap is laid out, for the two kinds of process that care: a short one (the
 * planner) in transparent huge pages, for fewer, cheaper page faults; and a training rank whose
 * peak resident memory the simulator predicts (sl_heap_give_back_free_pages).
 *
 * Why: a planner process touches 8-10 MB of fresh heap (the parsed profiles, network and
 * catalogue, the search's tables), and each first touch of a 4 KiB page is a page fault. On a
 * virtual machine a fault can cost far more than on bare metal: 14-19 us on the build machines
 * (Firecracker guests), against 0.3 us per 4 KiB for a 2 MiB huge page, so ~2,000 faults were
 * 25-35 ms of a 110 ms `sailor plan`. docs/design/planner.md ("Start-up") has the measurements. */
#ifndef SL_UTIL_HEAP_PAGES_H
#define SL_UTIL_HEAP_PAGES_H

#include <stddef.h>

/* Makes malloc serve this process from one heap (one arena for every thread, no separate
 * mappings for large blocks, nothing given back before exit) grown now by reserve_bytes, and
 * asks the kernel for huge pages on that growth (madvise MADV_HUGEPAGE; with THP "never", or
 * under a sanitizer's or valgrind's malloc, nothing changes). For commands that run briefly and
 * exit: memory freed is kept for reuse, not returned. Call before any thread starts. Returns the
 * bytes advised, 0 when none were (a hint only: the command works the same either way). */
size_t sl_heap_prefer_huge_pages(size_t reserve_bytes);

/* Gives the pages of the heap's free blocks back to the kernel (glibc's malloc_trim(0)); a block
 * put there later faults them in again. For a `sailor run` island rank, once, before its first
 * outer exchange: as in a synchronous run, glibc keeps the gradient sync's multi-megabyte
 * transient in the heap after the first step (it raises its mapping threshold to the size of a
 * mapped block freed), and the outer step's own allocations then take part of that freed space,
 * so that the next sync's transient extends the heap while the pages it left stay resident:
 * 1.2-1.6 MB more than the simulator predicts, for the rest of the run. Given back once, only
 * what is in use stays resident. (Holding the threshold at its default instead keeps every such
 * transient out of the heap, but maps and faults it in at every step: 7 % of the step of an
 * island of two 0.2-core ranks with ZeRO-1; docs/design/islands.md, what was measured.)
 * Returns 1 when memory was given back, 0 when none was (or malloc is not glibc's). */
int sl_heap_give_back_free_pages(void);

/* The reserve plan and simulate ask for: more than any planner process's heap so far. */
#define SL_HEAP_PLANNER_RESERVE_BYTES ((size_t)64 << 20)

#endif
