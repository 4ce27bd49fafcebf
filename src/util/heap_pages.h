/* How malloc's heap is laid out, for the two kinds of process that care: a short one (the
 * planner) in transparent huge pages, for fewer, cheaper page faults; and a training rank whose
 * peak resident memory the simulator predicts (sl_heap_fix_mmap_threshold).
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

/* Holds malloc's threshold for serving a block as its own mapping at glibc's default (128 KiB)
 * for the life of the process. glibc otherwise raises it to the size of any mapped block freed
 * (and its trim threshold to twice that), so that one large transient block moves every later
 * one of that size into the heap, which keeps the pages after free: in `sailor run` island
 * ranks, a multi-megabyte transient of MPI's freed during the first outer step left the next
 * gradient sync's transient in the heap, 1.2-1.6 MB more resident for the rest of the run than
 * the same plan's synchronous ranks show (docs/design/islands.md, what was measured). The
 * price: a transient above 128 KiB is mapped and faulted in at every call (a ZeRO-1 plan on
 * 1/9-core ranks ran 7 % slower so, docs/design/runtime-model.md; tri3's island plans no slower).
 * Returns 0 when malloc took it (not under a malloc that is not glibc's). */
int sl_heap_fix_mmap_threshold(void);

/* The reserve plan and simulate ask for: more than any planner process's heap so far. */
#define SL_HEAP_PLANNER_RESERVE_BYTES ((size_t)64 << 20)

#endif
