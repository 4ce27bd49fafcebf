/* Clocks (clock.h). */
#include "util/clock.h"

double sl_clock_s(clockid_t id)
{
	struct timespec ts;
	if (clock_gettime(id, &ts))
		return 0.0;
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double sl_now_s(void) { return sl_clock_s(CLOCK_MONOTONIC); }
