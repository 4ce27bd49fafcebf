/* A generation: one `sailor run ... --json` child of the controller, its output and its end.
 *
 * The child (started by util/run_command.h) runs in a process group of its own (so a terminal's
 * Ctrl-C reaches only the controller, which decides) with SIGTERM as its parent-death signal
 * (if the controller dies, the launcher checkpoints and stops its ranks as on any SIGTERM). Its
 * stdout and stderr come back through pipes: every byte is appended to <dir>/stdout.jsonl and
 * <dir>/stderr.log, and each complete line is handed to the caller. Stopping is SIGTERM to the
 * launcher (which makes every rank finish its step and write a checkpoint), then, past a
 * deadline, SIGKILL to the whole group and every process below the launcher.
 *
 * Invariants: at most one child per struct; after sl_ctl_gen_pump reports the end, the child is
 * reaped and both pipes are closed. Ownership: the struct owns its pipes (in child) and log
 * files (sl_ctl_gen_close).
 */
#ifndef SL_CTL_GENERATION_PROCESS_H
#define SL_CTL_GENERATION_PROCESS_H

#include <stdio.h>
#include <sys/types.h>

#include "util/err.h"
#include "util/run_command.h"

struct sl_ctl_gen {
	int index;            /* 1, 2, ... */
	pid_t pid;            /* the launcher (child.pid); also the process group id */
	struct sl_run_command child; /* the launcher started; its stdout, stderr pipes */
	FILE *log[2];         /* <dir>/stdout.jsonl, <dir>/stderr.log */
	char line[2][8192];
	size_t used[2];
	int reaped;
	int status;           /* exit status, or 128 + signal */
	double started_s;     /* monotonic */
	double term_sent_s;   /* when SIGTERM was sent (0: not) */
	int killed;           /* SIGKILL was sent to the group */
};

typedef void sl_ctl_line_fn(void *ctx, int is_stderr, const char *line);

/* Starts argv (argv[0] a path) with env additions (NAME=VALUE strings, NULL-terminated, may be
 * NULL), writing its logs into dir (which must exist). */
int sl_ctl_gen_start(struct sl_ctl_gen *g, int index, char *const argv[], char *const env[],
		     const char *dir, struct sl_err *err);

/* Waits up to timeout_ms for output, hands complete lines to fn, reaps the child when both pipes
 * closed. Returns 1 once the child has ended (g->status set), else 0. */
int sl_ctl_gen_pump(struct sl_ctl_gen *g, int timeout_ms, sl_ctl_line_fn *fn, void *ctx);

/* SIGTERM to the ranks (found below the launcher), or to the launcher before they exist. */
void sl_ctl_gen_terminate(struct sl_ctl_gen *g);
/* The liveness probe: SIGUSR1 to the launcher, which has mpirun forward it to every rank; each
 * rank answers {"event":"alive","rank":R} on its stdout, which comes back through the pipe. */
void sl_ctl_gen_probe(struct sl_ctl_gen *g);
/* SIGKILL to the whole process group and every process below the launcher. */
void sl_ctl_gen_kill(struct sl_ctl_gen *g);
/* The controller is a child subreaper (PR_SET_CHILD_SUBREAPER): processes a generation leaves
 * behind become its children. Kills and reaps every process below the controller; call only when
 * no generation runs. Returns how many were killed. */
int sl_ctl_reap_orphans(void);
/* Closes the logs and descriptors (after the end). */
void sl_ctl_gen_close(struct sl_ctl_gen *g);

#endif
