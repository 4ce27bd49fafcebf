/* Telling OpenMPI's start failures from the job's own (start_failure.h). */
#include "runtime/start_failure.h"

#include <stdio.h>
#include <string.h>

/* mpirun's messages for a job that did not start (OpenMPI 4.1), and what they mean to a user */
static const struct {
	const char *text, *reason;
} known[] = {
	{"mca_rtc_hwloc", "mpirun's daemon crashed while probing the hardware (mca_rtc_hwloc)"},
	{"unable to complete a TCP connection",
	 "a daemon could not complete its first TCP connection back to mpirun"},
	{"ORTE was unable to reliably start one or more daemons", "a daemon did not start"},
	{"An ORTE daemon has unexpectedly failed after launch",
	 "a daemon failed after launch, before it reported to mpirun"},
	{"ORTE has lost communication with a remote daemon",
	 "mpirun lost a daemon before any rank ran"},
};

void sl_start_watch_line(struct sl_start_watch *w, int is_stderr, const char *line)
{
	if (!is_stderr) {
		if (line[0])
			w->rank_output = 1;
		return;
	}
	if (w->reason[0])
		return;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strstr(line, known[i].text)) {
			snprintf(w->reason, sizeof(w->reason), "%s", known[i].reason);
			return;
		}
}

int sl_start_watch_retry(const struct sl_start_watch *w, int exit_status)
{
	return exit_status != 0 && w->reason[0] && !w->rank_output;
}
