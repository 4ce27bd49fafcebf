/* The one seam for test-only fault injection. Every SAILOR_TEST_* environment variable is read
 * here and nowhere else, so a reader of the production code sees a named call where a test may
 * inject a fault, and a grep for SAILOR_TEST_ finds every hook. Unset in normal use: then every
 * function here does nothing and matches nothing.
 *
 *   SAILOR_TEST_PERSIST_DELAY_MS=D     a checkpoint's writer sleeps D ms halfway through the
 *                                      tensors (a slow disk, so a test can kill it mid-file)
 *   SAILOR_TEST_PERSIST_CRASH_STEP=S   the writer of step S's checkpoint kills its own process
 *                                      (SIGKILL) there; with SAILOR_TEST_PERSIST_CRASH_MARK=FILE
 *                                      only once (FILE is made before the crash and disarms it)
 *   SAILOR_TEST_DROP_STEP_LINE=S[,S..] the controller ignores the pipe's line of each step S, as
 *                                      if mpirun had lost it; "stop" in the list: every step line
 *                                      that arrives once the generation was asked to stop
 *   SAILOR_TEST_LATE_STOP=R:S          rank R of `sailor run` sends itself SIGTERM right after step
 *                                      S's stop agreement (just too late for it)
 *   SAILOR_TEST_OUTER_BLOCKING=1       the islands' overlapped exchanges run blocking at their
 *                                      landing step, from the snapshot taken when they were due:
 *                                      the same algorithm without overlap (the test of the delay
 *                                      rule, docs/design/islands.md)
 *
 * Ownership: sl_test_drop_lines_free frees what sl_test_drop_lines_parse allocated.
 */
#ifndef SL_UTIL_TEST_FAULTS_H
#define SL_UTIL_TEST_FAULTS_H

#include "util/err.h"

/* Called halfway through writing step's checkpoint (train/checkpoint.c). */
void sl_test_fault_persist_midway(long long step);

/* The step after whose stop agreement rank sends itself SIGTERM; 0: none (runtime/runner.c). */
long long sl_test_late_stop_step(int rank);

/* 1 when SAILOR_TEST_OUTER_BLOCKING=1 (runtime/outer_exchange.c). */
int sl_test_outer_blocking(void);

struct sl_test_drop_lines {
	int after_stop;     /* "stop" was listed */
	long long *steps;
	int count;
};

/* Reads SAILOR_TEST_DROP_STEP_LINE into drop (zeroed first); a malformed list is SL_EUSAGE. */
int sl_test_drop_lines_parse(struct sl_test_drop_lines *drop, struct sl_err *err);

/* Whether the line of step is to be ignored; stopping: a stop of the generation was asked. */
int sl_test_drop_lines_match(const struct sl_test_drop_lines *drop, long long step, int stopping);

/* The warning that the line of step of generation is ignored (one line on stderr). */
void sl_test_drop_lines_warn(long long step, int generation);

void sl_test_drop_lines_free(struct sl_test_drop_lines *drop);

#endif
