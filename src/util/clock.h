/* Clocks, in seconds as doubles: the one place sailor reads them (timings, deadlines, the
 * controller's event times). Monotonic for anything measured or waited on. */
#ifndef SL_UTIL_CLOCK_H
#define SL_UTIL_CLOCK_H

#include <time.h>

/* Seconds on id (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, ...); 0 if
 * the clock cannot be read. */
double sl_clock_s(clockid_t id);

/* Monotonic seconds: sl_clock_s(CLOCK_MONOTONIC). */
double sl_now_s(void);

#endif
