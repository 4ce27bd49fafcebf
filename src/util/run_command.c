/* Starting a child process and finishing with it (run_command.h): the only fork and exec of
 * sailor.
 *
 * Between fork and exec the child runs code of this process: only what it needs there is done
 * there (no locks are taken that a thread of the parent could have held at the fork, beyond
 * what glibc makes safe after fork: putenv's allocation, fprintf to an unbuffered stderr).
 * Invariant: a descriptor this file creates is close-on-exec from its creation and above 2
 * (make_pipe), so the dup2s onto 0-2 in the child never overwrite one it still needs, and a
 * dup2 always clears the close-on-exec flag of the copy the program keeps. */
#include "util/run_command.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"

/* pipe2(O_CLOEXEC) with both ends moved above 2 (a parent started with 0, 1 or 2 closed would
 * get them back here, and the child's dup2 onto them would then overwrite a pipe end). */
static int make_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC))
		return -1;
	for (int i = 0; i < 2; i++) {
		if (p[i] > 2)
			continue;
		int moved = fcntl(p[i], F_DUPFD_CLOEXEC, 3);
		if (moved < 0) {
			int e = errno;
			close(p[0]);
			close(p[1]);
			errno = e;
			return -1;
		}
		close(p[i]);
		p[i] = moved;
	}
	return 0;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

/* The child's side: steps 1-6 of run_command.h, then the report of a failure. Never returns. */
static void __attribute__((noreturn)) run_child(const struct sl_run_command *c, pid_t parent,
						int out_w, int err_w, int report_w)
{
	if (c->new_process_group)
		setpgid(0, 0);
	for (const int *s = c->default_signals; s && *s; s++)
		signal(*s, SIG_DFL);
	if (c->parent_death_signal) {
		prctl(PR_SET_PDEATHSIG, c->parent_death_signal);
		/* the parent died before the call: nobody would ever send the signal */
		if (getppid() != parent)
			_exit(127);
	}
	if (c->in == SL_RUN_COMMAND_DEV_NULL) {
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull > STDIN_FILENO) {
			dup2(devnull, STDIN_FILENO);
			close(devnull);
		}
	}
	if (out_w >= 0)
		dup2(out_w, STDOUT_FILENO);
	if (err_w >= 0)
		dup2(err_w, STDERR_FILENO);
	else if (c->err == SL_RUN_COMMAND_TO_STDOUT)
		dup2(STDOUT_FILENO, STDERR_FILENO);
	int failed = 0;
	for (int i = 0; c->env && c->env[i] && !failed; i++)
		failed = putenv(c->env[i]) != 0;
	if (!failed) {
		if (c->use_path)
			execvp(c->argv[0], c->argv);
		else
			execv(c->argv[0], c->argv);
	}
	int e = errno;
	if (report_w >= 0) {
		if (write(report_w, &e, sizeof(e)) < 0) {
			/* the parent reads an empty pipe: it takes the exec as done, and sees 127 */
		}
	} else {
		fprintf(stderr, "%s: cannot start '%s': %s\n", c->who ? c->who : "sailor",
			c->argv[0], strerror(e));
	}
	_exit(127);
}

/* EXEC_RETURN: waits for the child's exec (the report pipe closes on it) or for the errno it
 * sends when the exec failed; then reaps it. Returns that errno, 0 when the exec happened. */
static int exec_result(struct sl_run_command *c, int report_r)
{
	int e = 0;
	ssize_t got;
	while ((got = read(report_r, &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(report_r);
	if (got != (ssize_t)sizeof(e) || !e)
		return 0;
	sl_run_command_close(c);
	sl_run_command_wait(c);
	return e;
}

int sl_run_command_start(struct sl_run_command *c, struct sl_err *err)
{
	c->pid = 0;
	c->out_fd = c->err_fd = -1;
	c->exec_errno = c->reaped = c->status = c->term_signal = c->timed_out = 0;
	const char *prog = c->argv[0];
	int out[2] = {-1, -1}, errp[2] = {-1, -1}, report[2] = {-1, -1};
	if ((c->out == SL_RUN_COMMAND_PIPE && make_pipe(out)) ||
	    (c->err == SL_RUN_COMMAND_PIPE && make_pipe(errp)) ||
	    (c->exec_failure == SL_RUN_COMMAND_EXEC_RETURN && make_pipe(report))) {
		int e = errno;
		close_pair(out);
		close_pair(errp);
		close_pair(report);
		return sl_err_set(err, SL_EIO, "cannot create a pipe for '%s': %s", prog,
				  strerror(e));
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close_pair(out);
		close_pair(errp);
		close_pair(report);
		return sl_err_set(err, SL_EIO, "cannot fork '%s': %s", prog, strerror(e));
	}
	if (pid == 0)
		run_child(c, parent, out[1], errp[1], report[1]);
	if (c->new_process_group)
		setpgid(pid, pid); /* also here: a signal to the group cannot race the child's call */
	/* the child's ends: its copies are all it needs */
	int child_ends[3] = {out[1], errp[1], report[1]};
	for (int i = 0; i < 3; i++)
		if (child_ends[i] >= 0)
			close(child_ends[i]);
	c->pid = pid;
	c->out_fd = out[0];
	c->err_fd = errp[0];
	if (report[0] >= 0 && (c->exec_errno = exec_result(c, report[0])))
		return sl_err_set(err, c->exec_errno == ENOENT ? SL_ENOTFOUND : SL_EIO,
				  "cannot run '%s': %s", prog, strerror(c->exec_errno));
	return 0;
}

int sl_run_command_read(struct sl_run_command *c, int timeout_ms, sl_run_command_output_fn *fn,
			void *ctx)
{
	if (c->out_fd < 0 && c->err_fd < 0)
		return 0;
	struct pollfd fds[2] = {{c->out_fd, POLLIN, 0}, {c->err_fd, POLLIN, 0}};
	int n = poll(fds, 2, timeout_ms);
	if (n < 0 && errno != EINTR)
		return -1;
	int *fd[2] = {&c->out_fd, &c->err_fd};
	char buf[8192];
	for (int i = 0; i < 2 && n > 0; i++) {
		if (*fd[i] < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		ssize_t got = read(*fd[i], buf, sizeof(buf));
		if (got > 0) {
			if (fn)
				fn(ctx, i, buf, (size_t)got);
		} else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
			close(*fd[i]);
			*fd[i] = -1;
		}
	}
	return (c->out_fd >= 0) + (c->err_fd >= 0);
}

int sl_run_command_reap(struct sl_run_command *c, int block)
{
	if (c->reaped)
		return 1;
	int st = 0;
	pid_t r = waitpid(c->pid, &st, block ? 0 : WNOHANG);
	if (r == 0)
		return 0;
	if (r < 0)
		return -1;
	c->reaped = 1;
	c->term_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	c->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 1;
}

int sl_run_command_wait(struct sl_run_command *c)
{
	while (sl_run_command_reap(c, 1) < 0 && errno == EINTR)
		;
	return c->status;
}

void sl_run_command_kill(const struct sl_run_command *c, int sig)
{
	if (c->pid > 0 && !c->reaped)
		kill(c->pid, sig);
}

int sl_run_command_finish(struct sl_run_command *c, double timeout_s, double grace_s,
			  sl_run_command_output_fn *fn, void *ctx)
{
	double deadline = sl_now_s() + timeout_s, drain_until = 0;
	int signalled = 0, exited = 0;
	while (c->out_fd >= 0 || c->err_fd >= 0) {
		sl_run_command_read(c, 50, fn, ctx);
		if (!exited && sl_run_command_reap(c, 0) == 1) {
			exited = 1;
			drain_until = sl_now_s() + 1.0;
		}
		if (exited && sl_now_s() > drain_until)
			break;
		if (!exited && !signalled && sl_now_s() > deadline) {
			sl_run_command_kill(c, SIGTERM);
			signalled = 1;
			deadline = sl_now_s() + grace_s;
		} else if (!exited && signalled == 1 && sl_now_s() > deadline) {
			sl_run_command_kill(c, SIGKILL);
			signalled = 2;
		}
	}
	sl_run_command_close(c);
	c->timed_out = signalled > 0;
	return sl_run_command_wait(c);
}

/* What sl_run_command_capture has collected. */
struct collected {
	char *buf;        /* NULL when even the first allocation failed: everything is dropped */
	size_t used, cap; /* cap includes the terminating NUL */
	size_t max;
};

static void collect(void *ctx, int is_stderr, const char *buf, size_t n)
{
	(void)is_stderr;
	struct collected *k = ctx;
	if (!k->buf)
		return;
	if (n > k->max - k->used)
		n = k->max - k->used;
	while (k->used + n + 1 > k->cap) {
		/* grown by doubling; when that fails, what fits is kept */
		size_t want = k->cap * 2 < k->max + 1 ? k->cap * 2 : k->max + 1;
		char *grown = realloc(k->buf, want);
		if (!grown) {
			n = k->cap - 1 - k->used;
			break;
		}
		k->buf = grown;
		k->cap = want;
	}
	memcpy(k->buf + k->used, buf, n);
	k->used += n;
}

int sl_run_command_capture(struct sl_run_command *c, double timeout_s, size_t max_bytes,
			   char **out, struct sl_err *err)
{
	*out = NULL;
	struct collected k = {malloc(4096), 0, 4096, max_bytes};
	double deadline = sl_now_s() + timeout_s;
	for (;;) {
		double left = deadline - sl_now_s();
		if (left <= 0) {
			sl_run_command_kill(c, SIGKILL);
			c->timed_out = 1;
			break;
		}
		if (sl_run_command_read(c, (int)(left * 1000) + 1, collect, &k) == 0)
			break;
	}
	sl_run_command_close(c);
	sl_run_command_wait(c);
	if (!k.buf)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	k.buf[k.used] = 0;
	*out = k.buf;
	return 0;
}

void sl_run_command_close(struct sl_run_command *c)
{
	if (c->pid <= 0)
		return;
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	c->out_fd = c->err_fd = -1;
}
