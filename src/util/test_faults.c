/* Test-only fault injection (test_faults.h). */
#include "util/test_faults.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

void sl_test_fault_persist_midway(long long step)
{
	const char *delay = getenv("SAILOR_TEST_PERSIST_DELAY_MS");
	const char *crash = getenv("SAILOR_TEST_PERSIST_CRASH_STEP");
	if (delay && atoi(delay) > 0)
		usleep((useconds_t)atoi(delay) * 1000u);
	const char *mark = getenv("SAILOR_TEST_PERSIST_CRASH_MARK");
	if (crash && atoll(crash) == step) {
		if (mark) {
			if (access(mark, F_OK) == 0)
				return;
			FILE *f = fopen(mark, "w");
			if (f)
				fclose(f);
		}
		fflush(NULL);
		raise(SIGKILL);
	}
}

long long sl_test_late_stop_step(int rank)
{
	const char *late = getenv("SAILOR_TEST_LATE_STOP");
	int late_rank = -1;
	long long late_step = 0;
	if (late && sscanf(late, "%d:%lld", &late_rank, &late_step) == 2 && late_rank == rank)
		return late_step;
	return 0;
}

int sl_test_outer_blocking(void)
{
	const char *v = getenv("SAILOR_TEST_OUTER_BLOCKING");
	return v && !strcmp(v, "1");
}

int sl_test_drop_lines_parse(struct sl_test_drop_lines *drop, struct sl_err *err)
{
	memset(drop, 0, sizeof(*drop));
	const char *text = getenv("SAILOR_TEST_DROP_STEP_LINE");
	if (!text || !text[0])
		return 0;
	const char *p = text;
	while (*p) {
		if (!strncmp(p, "stop", 4) && (p[4] == ',' || !p[4])) {
			drop->after_stop = 1;
			p += p[4] ? 5 : 4;
			continue;
		}
		char *end;
		errno = 0;
		long long step = strtoll(p, &end, 10);
		if (end == p || errno || step < 1 || (*end && *end != ','))
			return sl_err_set(err, SL_EUSAGE, "SAILOR_TEST_DROP_STEP_LINE '%s': give step "
					  "numbers (or 'stop') separated by commas", text);
		long long *grown = realloc(drop->steps, (size_t)(drop->count + 1) * sizeof(*grown));
		if (!grown)
			return sl_err_set(err, SL_ENOMEM, "out of memory");
		drop->steps = grown;
		drop->steps[drop->count++] = step;
		p = *end ? end + 1 : end;
	}
	return 0;
}

int sl_test_drop_lines_match(const struct sl_test_drop_lines *drop, long long step, int stopping)
{
	int match = drop->after_stop && stopping;
	for (int i = 0; i < drop->count && !match; i++)
		match = drop->steps[i] == step;
	return match;
}

void sl_test_drop_lines_warn(long long step, int generation)
{
	sl_log_warn("SAILOR_TEST_DROP_STEP_LINE: ignoring the line of step %lld of generation %d",
		    step, generation);
}

void sl_test_drop_lines_free(struct sl_test_drop_lines *drop)
{
	free(drop->steps);
	memset(drop, 0, sizeof(*drop));
}
