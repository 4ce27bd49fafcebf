/* Starting a program as a child process and finishing with it: the one place sailor forks and
 * execs (git's run-command.c). `sailor run` starts mpirun or srun, the profilers start small
 * MPI jobs, the controller starts each generation, the Slurm glue runs scontrol, squeue and
 * scancel, `sailor report` runs gnuplot; each describes its child in a struct sl_run_command
 * and this module builds it, the same way for all.
 *
 * The child, in this order, between fork and exec:
 *   1. its own process group (new_process_group; the parent calls setpgid too, so a signal to
 *      the group cannot race the child's own call);
 *   2. default_signals back to SIG_DFL (a disposition the parent set, SIG_IGN above all, would
 *      otherwise survive exec, or a handler of the parent could run in the child before it);
 *   3. parent_death_signal set with prctl, and _exit(127) at once when the parent has already
 *      died (the signal is sent on the parent's death after the call only);
 *   4. stdin, stdout and stderr as asked: inherited, a pipe to the parent, /dev/null (stdin),
 *      or stderr into stdout;
 *   5. env entries put into its environment (putenv: "NAME=VALUE" sets, "NAME" alone removes);
 *   6. exec: argv[0] looked up on PATH (use_path) or taken as a path.
 * When exec (or step 5) fails the child exits with 127 after saying why, in one of two ways
 * (exec_failure): SL_RUN_COMMAND_EXEC_PRINT, "<who>: cannot start '<argv[0]>': <reason>" on its
 * own stderr (which may be the pipe the parent reads: the message travels with the output);
 * SL_RUN_COMMAND_EXEC_RETURN, silently, its errno sent back through a close-on-exec pipe, so
 * that sl_run_command_start waits for the exec and returns the error itself.
 *
 * Invariants: every descriptor this module creates is close-on-exec, so a child holds exactly
 * its stdin, stdout and stderr of these pipes and no other child (started meanwhile) holds any;
 * the pipes are never on descriptors 0-2, so that setting the child's 0-2 cannot overwrite one.
 * Nothing here changes the parent's own signal dispositions.
 *
 * Usage:
 *   struct sl_run_command c = {.argv = argv, .use_path = 1, .out = SL_RUN_COMMAND_PIPE};
 *   if (sl_run_command_start(&c, err)) return err->code;
 *   ... sl_run_command_read(&c, ...) until it returns 0, then sl_run_command_wait(&c) ...
 *   ... or sl_run_command_finish / sl_run_command_capture, which do both ...
 *
 * Ownership: argv and env belong to the caller and are read during sl_run_command_start only.
 * The struct owns the read ends of its pipes from a successful start until they are closed
 * (by sl_run_command_read at their end, or sl_run_command_close); the finishing calls close
 * them. A child started must be reaped by one of the waits (or the caller's own waitpid).
 */
#ifndef SL_UTIL_RUN_COMMAND_H
#define SL_UTIL_RUN_COMMAND_H

#include <stddef.h>
#include <sys/types.h>

#include "util/err.h"

/* Where a standard descriptor of the child goes. */
enum sl_run_command_fd {
	SL_RUN_COMMAND_INHERIT = 0, /* the parent's own */
	SL_RUN_COMMAND_PIPE,        /* stdout, stderr: a pipe; the parent reads out_fd, err_fd */
	SL_RUN_COMMAND_DEV_NULL,    /* stdin: /dev/null */
	SL_RUN_COMMAND_TO_STDOUT,   /* stderr: wherever stdout goes (2>&1) */
};

/* How the child reports a failed exec (see above). */
enum sl_run_command_exec_failure {
	SL_RUN_COMMAND_EXEC_PRINT = 0,
	SL_RUN_COMMAND_EXEC_RETURN,
};

struct sl_run_command {
	/* the child: the caller fills these; zero is the default of each */
	char *const *argv;          /* program and arguments, NULL-terminated */
	int use_path;               /* 1: argv[0] looked up on PATH; 0: it is a path */
	char *const *env;           /* "NAME=VALUE" added to its environment; NULL-terminated, or
				     * NULL for none */
	int in, out, err;           /* enum sl_run_command_fd */
	int new_process_group;      /* 1: a process group of its own, led by the child */
	int parent_death_signal;    /* sent when the parent dies (prctl, and the check
				     * above); 0: none */
	const int *default_signals; /* reset to SIG_DFL in the child; 0-terminated, or NULL */
	int exec_failure;           /* enum sl_run_command_exec_failure */
	const char *who;            /* EXEC_PRINT: the message's prefix ("sailor run"); NULL:
				     * "sailor" */

	/* filled by sl_run_command_start */
	pid_t pid;                  /* the child (and its group with new_process_group) */
	int out_fd, err_fd;         /* read ends of the pipes; -1 when none or closed */
	int exec_errno;             /* EXEC_RETURN: why the exec failed; 0 when it ran */

	/* filled by the waits */
	int reaped;                 /* 1 once waited for */
	int status;                 /* its exit status, or 128 + the signal that ended it; 0 until
				     * reaped (and when waitpid could not find it) */
	int term_signal;            /* the signal that ended it; 0 when it exited */
	int timed_out;              /* finish, capture: the deadline passed and it was signalled */
};

/* Starts the child c describes. On failure nothing is left open or running and err says what,
 * naming the program: SL_EIO "cannot create a pipe for '<argv[0]>': ..." or "cannot fork
 * '<argv[0]>': ..."; with EXEC_RETURN also "cannot run '<argv[0]>': <reason>" (SL_ENOTFOUND
 * when there is no such program, else SL_EIO) with c->exec_errno set and the child reaped
 * (status 127). */
int sl_run_command_start(struct sl_run_command *c, struct sl_err *err);

/* Output handed on as it comes: is_stderr 0 for out_fd, 1 for err_fd. */
typedef void sl_run_command_output_fn(void *ctx, int is_stderr, const char *buf, size_t n);

/* Waits up to timeout_ms for output on the open pipes, reads what is there (one read per pipe)
 * and hands it to fn (may be NULL); a pipe at its end (or failing) is closed. Returns how many
 * pipes are still open (0 at once when none is), or -1 when poll fails (not EINTR: an
 * interrupted wait counts as no output). */
int sl_run_command_read(struct sl_run_command *c, int timeout_ms, sl_run_command_output_fn *fn,
			void *ctx);

/* waitpid for the child once, blocking or not. Returns 1 when it is reaped (now or before:
 * c->status, c->term_signal set), 0 when it still runs (block 0 only), -1 when waitpid failed
 * (errno; EINTR: a signal came first, the caller may act on it and wait again). */
int sl_run_command_reap(struct sl_run_command *c, int block);

/* Waits for the child to end, through EINTR; returns c->status. */
int sl_run_command_wait(struct sl_run_command *c);

/* Signals the child unless it is reaped (its pid may be another process's by then). */
void sl_run_command_kill(const struct sl_run_command *c, int sig);

/* The end of a long child whose output streams on: hands the output to fn until both pipes are
 * closed, or the child has exited and 1 s more passed (a daemon it left behind may hold the
 * pipes: what is there, not more); past timeout_s it sends SIGTERM, and SIGKILL grace_s later
 * (c->timed_out). Closes the pipes, reaps the child; returns c->status. */
int sl_run_command_finish(struct sl_run_command *c, double timeout_s, double grace_s,
			  sl_run_command_output_fn *fn, void *ctx);

/* The output of a short command: collects what comes through the pipes (stdout and stderr in
 * one buffer as they come) until they close, into *out (malloc'd, NUL-terminated, the caller
 * frees; the first max_bytes bytes kept, the rest read and dropped). Past timeout_s it sends
 * SIGKILL and stops reading (c->timed_out). Closes the pipes, reaps the child; returns 0, or
 * SL_ENOMEM with *out NULL. */
int sl_run_command_capture(struct sl_run_command *c, double timeout_s, size_t max_bytes,
			   char **out, struct sl_err *err);

/* Closes the pipes still open (the child then gets SIGPIPE or EPIPE if it writes); does not
 * wait. Harmless on a struct that was zeroed and never started. */
void sl_run_command_close(struct sl_run_command *c);

#endif
