/* OpenMPI failing to start its job, told apart from the job failing.
 *
 * On this kind of machine mpirun now and then fails before any rank runs: its daemon crashes
 * while it probes the hardware (a stack through mca_rtc_hwloc), or a daemon in a fresh network
 * namespace cannot complete its first TCP connection back to mpirun. Nothing of the job ran, so
 * starting it once more is safe, and what a user would do by hand; a second failure is reported.
 * The launchers (`sailor run`, the profilers through launch_run.h, tests) feed mpirun's output
 * lines to a watch and ask it after a failed exit whether this was such a start failure.
 *
 * Invariant: a watch says "retry" only when one of the known start-failure messages was seen and
 * no rank had printed anything on stdout (a job that started is never run twice).
 */
#ifndef SL_RUNTIME_START_FAILURE_H
#define SL_RUNTIME_START_FAILURE_H

struct sl_start_watch {
	int rank_output;        /* a line came on stdout: a rank ran */
	char reason[160];       /* the first start-failure message recognized ("" none) */
};

/* Looks at one line of mpirun's output (is_stderr: from its stderr). */
void sl_start_watch_line(struct sl_start_watch *w, int is_stderr, const char *line);

/* 1 when a job that ended with exit_status (0 is success) failed to start as described above. */
int sl_start_watch_retry(const struct sl_start_watch *w, int exit_status);

#endif
