/* The islands' schedule (outer_schedule.h): closed forms, no state. */
#include "plan/outer_schedule.h"

static int inner(const struct sl_outer_schedule *s, int island)
{
	return s->islands->inner_steps[island];
}

long long sl_outer_schedule_steps_before(const struct sl_outer_schedule *s, int island,
					 long long c)
{
	long long h0 = inner(s, 0), hi = inner(s, island);
	long long r = c / h0, p = c % h0;
	return r * hi + (p * hi + h0 - 1) / h0;
}

int sl_outer_schedule_steps_at(const struct sl_outer_schedule *s, int island, long long c)
{
	return sl_outer_schedule_steps_before(s, island, c + 1) >
	       sl_outer_schedule_steps_before(s, island, c);
}

int sl_outer_schedule_shift(const struct sl_outer_schedule *s, int island, int fragment)
{
	return (int)((long long)fragment * inner(s, island) / s->islands->fragments);
}

/* The rounds the run completes: their syncs are scheduled, the rest is the final flush's. */
static long long complete_rounds(const struct sl_outer_schedule *s)
{
	return s->run_steps / inner(s, 0);
}

long long sl_outer_schedule_sync_index(const struct sl_outer_schedule *s, int island,
				       long long step, int fragment)
{
	return (step + sl_outer_schedule_shift(s, island, fragment)) / inner(s, island);
}

int sl_outer_schedule_syncs_after(const struct sl_outer_schedule *s, int island, long long step,
				  int fragment)
{
	long long hi = inner(s, island);
	long long sh = sl_outer_schedule_shift(s, island, fragment);
	if (step < 1 || (step + sh) % hi != 0)
		return 0;
	long long k = (step + sh) / hi;
	return k >= s->first_round && k <= complete_rounds(s);
}

long long sl_outer_schedule_resume_at(const struct sl_outer_schedule *s, long long step)
{
	long long h0 = inner(s, 0);
	return step % h0 == 0 ? step / h0 + 1 : step / h0 + 2;
}

long long sl_outer_schedule_last_sync(const struct sl_outer_schedule *s, int island,
				      long long step, int fragment)
{
	long long hi = inner(s, island);
	long long sh = sl_outer_schedule_shift(s, island, fragment);
	long long k = (step + sh) / hi;
	if (k > complete_rounds(s))
		k = complete_rounds(s);
	long long at = k * hi - sh;
	return k >= 1 && at >= 1 ? at : 0;
}

long long sl_outer_schedule_steps_in_sync(const struct sl_outer_schedule *s, int island,
					  int fragment, long long k)
{
	long long hi = inner(s, island);
	long long sh = sl_outer_schedule_shift(s, island, fragment);
	if (k == 0) {
		long long total = sl_outer_schedule_steps_before(s, island, s->run_steps);
		return total - sl_outer_schedule_last_sync(s, island, total, fragment);
	}
	long long at = k * hi - sh, before = (k - 1) * hi - sh;
	return at - (before > 0 ? before : 0);
}
