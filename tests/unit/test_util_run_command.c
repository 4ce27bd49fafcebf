/* Unit tests for starting and finishing child processes (util/run_command.h): /bin/sh children
 * for exit statuses, output, environment, exec failures and deadlines; this binary itself,
 * re-executed through /proc/self/exe in a helper mode, for what sh cannot show (the parent-death
 * signal, the process group, signal dispositions). Timings are generous bounds only: a deadline
 * of 0.3 s must end a 30 s sleep well within 20 s. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/clock.h"
#include "util/run_command.h"

#define HELPER_REPORT "--run-command-helper-report"
#define HELPER_ORPHAN "--run-command-helper-orphan"

/* Helper mode: what the parent set up for this process, on one line. */
static int helper_report(void)
{
	int sig = -1;
	prctl(PR_GET_PDEATHSIG, &sig);
	struct sigaction sa;
	sigaction(SIGPIPE, NULL, &sa);
	printf("pdeathsig=%d own_group=%d sigpipe_ignored=%d env=%s\n", sig,
	       getpgrp() == getpid(), sa.sa_handler == SIG_IGN,
	       getenv("SL_RUN_COMMAND_TEST") ? getenv("SL_RUN_COMMAND_TEST") : "-");
	return 0;
}

/* Helper mode: starts `sleep 30` with SIGKILL as its parent-death signal, prints its pid and
 * exits without waiting: the sleep must die with this process. */
static int helper_orphan(void)
{
	char *argv[] = {"sleep", "30", NULL};
	struct sl_run_command c = {.argv = argv, .use_path = 1, .in = SL_RUN_COMMAND_DEV_NULL,
				   .out = SL_RUN_COMMAND_PIPE, .parent_death_signal = SIGKILL};
	struct sl_err err = {0};
	if (sl_run_command_start(&c, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("%d\n", (int)c.pid);
	return 0;
}

/* Output gathered by an sl_run_command_output_fn, per stream. */
struct streams {
	char text[2][4096];
	size_t used[2];
};

static void gather(void *ctx, int is_stderr, const char *buf, size_t n)
{
	struct streams *s = ctx;
	size_t room = sizeof(s->text[0]) - 1 - s->used[is_stderr];
	if (n > room)
		n = room;
	memcpy(s->text[is_stderr] + s->used[is_stderr], buf, n);
	s->used[is_stderr] += n;
	s->text[is_stderr][s->used[is_stderr]] = 0;
}

/* Starts /bin/sh -c script with stdout and stderr piped and finishes it (deadline 60 s). */
static int sh(const char *script, struct streams *out)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	struct sl_run_command c = {.argv = argv, .out = SL_RUN_COMMAND_PIPE,
				   .err = SL_RUN_COMMAND_PIPE};
	struct sl_err err = {0};
	memset(out, 0, sizeof(*out));
	assert_int_equal(sl_run_command_start(&c, &err), 0);
	int status = sl_run_command_finish(&c, 60, 3, gather, out);
	assert_false(c.timed_out);
	assert_int_equal(c.out_fd, -1);
	assert_int_equal(c.err_fd, -1);
	return status;
}

static void exit_status_and_signal(void **state)
{
	(void)state;
	struct streams s;
	assert_int_equal(sh("exit 0", &s), 0);
	assert_int_equal(sh("exit 3", &s), 3);
	char *argv[] = {"sh", "-c", "kill -TERM $$", NULL};
	struct sl_run_command c = {.argv = argv, .use_path = 1};
	assert_int_equal(sl_run_command_start(&c, NULL), 0);
	assert_int_equal(sl_run_command_wait(&c), 128 + SIGTERM);
	assert_int_equal(c.term_signal, SIGTERM);
	assert_true(c.reaped);
	assert_int_equal(sl_run_command_reap(&c, 1), 1); /* once reaped, stays reaped */
	/* not waiting: still running, then killed */
	char *sleeper[] = {"sh", "-c", "exec sleep 30", NULL};
	c = (struct sl_run_command){.argv = sleeper, .use_path = 1};
	assert_int_equal(sl_run_command_start(&c, NULL), 0);
	assert_int_equal(sl_run_command_reap(&c, 0), 0);
	sl_run_command_kill(&c, SIGKILL);
	assert_int_equal(sl_run_command_wait(&c), 128 + SIGKILL);
	/* a zeroed struct never started: closing it touches no descriptor (0 is stdin) */
	struct sl_run_command never = {0};
	int stdin_flags = fcntl(STDIN_FILENO, F_GETFD);
	sl_run_command_close(&never);
	assert_int_equal(fcntl(STDIN_FILENO, F_GETFD), stdin_flags);
}

static void output_streams_and_environment(void **state)
{
	(void)state;
	struct streams s;
	assert_int_equal(sh("echo out; echo err >&2; exit 5", &s), 5);
	assert_string_equal(s.text[0], "out\n");
	assert_string_equal(s.text[1], "err\n");
	/* a last line without a newline, and a lot of output */
	assert_int_equal(sh("i=0; while [ $i -lt 500 ]; do echo line$i; i=$((i+1)); done; "
			    "printf end", &s), 0);
	assert_non_null(strstr(s.text[0], "line0\nline1\n"));
	/* capture: stderr into stdout, stdin /dev/null, an environment entry added */
	char *argv[] = {"sh", "-c", "cat; echo \"x=$SL_RUN_COMMAND_TEST\"; echo oops >&2; exit 2",
			NULL};
	char *env[] = {"SL_RUN_COMMAND_TEST=set here", NULL};
	struct sl_run_command c = {.argv = argv, .use_path = 1, .env = env,
				   .in = SL_RUN_COMMAND_DEV_NULL, .out = SL_RUN_COMMAND_PIPE,
				   .err = SL_RUN_COMMAND_TO_STDOUT};
	struct sl_err err = {0};
	char *text = NULL;
	assert_int_equal(sl_run_command_start(&c, &err), 0);
	assert_int_equal(c.err_fd, -1);
	assert_int_equal(sl_run_command_capture(&c, 60, 1 << 20, &text, &err), 0);
	assert_string_equal(text, "x=set here\noops\n");
	assert_int_equal(c.status, 2);
	assert_false(c.timed_out);
	free(text);
	assert_null(getenv("SL_RUN_COMMAND_TEST")); /* the child's, not ours */
	/* capture keeps the first max_bytes */
	char *digits[] = {"sh", "-c", "printf 0123456789", NULL};
	c = (struct sl_run_command){.argv = digits, .use_path = 1, .out = SL_RUN_COMMAND_PIPE};
	assert_int_equal(sl_run_command_start(&c, &err), 0);
	assert_int_equal(sl_run_command_capture(&c, 60, 4, &text, &err), 0);
	assert_string_equal(text, "0123");
	free(text);
}

static void exec_failure_returned_or_printed(void **state)
{
	(void)state;
	/* returned: the error names the program; the child is reaped with 127 */
	char *missing[] = {"/nonexistent/sailor-no-such-program", NULL};
	struct sl_run_command c = {.argv = missing, .out = SL_RUN_COMMAND_PIPE,
				   .exec_failure = SL_RUN_COMMAND_EXEC_RETURN};
	struct sl_err err = {0};
	assert_int_equal(sl_run_command_start(&c, &err), SL_ENOTFOUND);
	assert_string_equal(err.msg, "cannot run '/nonexistent/sailor-no-such-program': No such "
			    "file or directory");
	assert_int_equal(c.exec_errno, ENOENT);
	assert_true(c.reaped);
	assert_int_equal(c.status, 127);
	assert_int_equal(c.out_fd, -1);
	/* the same on PATH */
	char *on_path[] = {"sailor-no-such-program-on-path", NULL};
	c = (struct sl_run_command){.argv = on_path, .use_path = 1,
				    .exec_failure = SL_RUN_COMMAND_EXEC_RETURN};
	assert_int_equal(sl_run_command_start(&c, &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "cannot run 'sailor-no-such-program-on-path'"));
	/* not a missing program: another reason, another code */
	char *not_exec[] = {"/dev/null", NULL};
	c = (struct sl_run_command){.argv = not_exec,
				    .exec_failure = SL_RUN_COMMAND_EXEC_RETURN};
	assert_int_equal(sl_run_command_start(&c, &err), SL_EIO);
	assert_string_equal(err.msg, "cannot run '/dev/null': Permission denied");
	/* a program that runs: start returns after its exec, output intact */
	char *runs[] = {"sh", "-c", "echo ran", NULL};
	c = (struct sl_run_command){.argv = runs, .use_path = 1, .out = SL_RUN_COMMAND_PIPE,
				    .exec_failure = SL_RUN_COMMAND_EXEC_RETURN};
	char *text = NULL;
	assert_int_equal(sl_run_command_start(&c, &err), 0);
	assert_int_equal(c.exec_errno, 0);
	assert_int_equal(sl_run_command_capture(&c, 60, 100, &text, &err), 0);
	assert_string_equal(text, "ran\n");
	free(text);
	/* printed: start succeeds, the child says why on its stderr and exits 127 */
	c = (struct sl_run_command){.argv = missing, .out = SL_RUN_COMMAND_PIPE,
				    .err = SL_RUN_COMMAND_PIPE, .who = "sailor test"};
	assert_int_equal(sl_run_command_start(&c, &err), 0);
	struct streams s = {0};
	assert_int_equal(sl_run_command_finish(&c, 60, 3, gather, &s), 127);
	assert_string_equal(s.text[1], "sailor test: cannot start "
			    "'/nonexistent/sailor-no-such-program': No such file or directory\n");
	assert_string_equal(s.text[0], "");
}

/* Reads c's output into s until it holds want (20 s at most). */
static void read_until(struct sl_run_command *c, struct streams *s, const char *want)
{
	double start = sl_now_s();
	while (!strstr(s->text[0], want) && sl_now_s() - start < 20)
		assert_true(sl_run_command_read(c, 1000, gather, s) > 0);
	assert_non_null(strstr(s->text[0], want));
}

static void deadline_then_signal(void **state)
{
	(void)state;
	/* SIGTERM at the deadline ends it */
	char *sleeper[] = {"sh", "-c", "echo started; exec sleep 30", NULL};
	struct sl_run_command c = {.argv = sleeper, .use_path = 1, .out = SL_RUN_COMMAND_PIPE,
				   .err = SL_RUN_COMMAND_PIPE};
	struct streams s = {0};
	double start = sl_now_s();
	assert_int_equal(sl_run_command_start(&c, NULL), 0);
	assert_int_equal(sl_run_command_finish(&c, 0.3, 3, gather, &s), 128 + SIGTERM);
	assert_true(c.timed_out);
	assert_int_equal(c.term_signal, SIGTERM);
	assert_true(sl_now_s() - start < 20);
	/* a child that ignores SIGTERM gets SIGKILL grace_s later; the deadline counts from the
	 * finish, which starts once the trap is set (it said "ready") */
	char *stubborn[] = {"sh", "-c", "trap '' TERM; echo ready; exec sleep 30", NULL};
	c = (struct sl_run_command){.argv = stubborn, .use_path = 1, .out = SL_RUN_COMMAND_PIPE};
	memset(&s, 0, sizeof(s));
	start = sl_now_s();
	assert_int_equal(sl_run_command_start(&c, NULL), 0);
	read_until(&c, &s, "ready\n");
	assert_int_equal(sl_run_command_finish(&c, 0.3, 0.3, gather, &s), 128 + SIGKILL);
	assert_true(c.timed_out);
	assert_int_equal(c.term_signal, SIGKILL);
	assert_true(sl_now_s() - start < 20);
	/* capture: SIGKILL at the deadline, what came before is kept */
	c = (struct sl_run_command){.argv = sleeper, .use_path = 1, .out = SL_RUN_COMMAND_PIPE};
	char *text = NULL;
	start = sl_now_s();
	assert_int_equal(sl_run_command_start(&c, NULL), 0);
	assert_int_equal(sl_run_command_capture(&c, 0.3, 100, &text, NULL), 0);
	assert_true(c.timed_out);
	assert_int_equal(c.term_signal, SIGKILL);
	assert_true(sl_now_s() - start < 20);
	free(text);
	/* no deadline reached: not timed out */
	assert_int_equal(sh("sleep 0.1; exit 4", &s), 4);
}

/* Runs this binary in the report helper mode with c's settings; its one line into line. */
static void report(struct sl_run_command *c, char *line, size_t size)
{
	static char *argv[] = {"/proc/self/exe", HELPER_REPORT, NULL};
	c->argv = argv;
	c->out = SL_RUN_COMMAND_PIPE;
	struct sl_err err = {0};
	char *text = NULL;
	assert_int_equal(sl_run_command_start(c, &err), 0);
	assert_int_equal(sl_run_command_capture(c, 60, 1000, &text, &err), 0);
	assert_int_equal(c->status, 0);
	snprintf(line, size, "%s", text);
	free(text);
}

static void child_setup_as_asked(void **state)
{
	(void)state;
	char line[256];
	/* our SIGPIPE ignored, as `sailor run` and the controller have it */
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	static const int defaults[] = {SIGPIPE, 0};
	char *env[] = {"SL_RUN_COMMAND_TEST=yes", NULL};
	struct sl_run_command c = {.parent_death_signal = SIGKILL, .new_process_group = 1,
				   .default_signals = defaults, .env = env};
	report(&c, line, sizeof(line));
	assert_string_equal(line, "pdeathsig=9 own_group=1 sigpipe_ignored=0 env=yes\n");
	c = (struct sl_run_command){.parent_death_signal = SIGTERM};
	report(&c, line, sizeof(line));
	assert_string_equal(line, "pdeathsig=15 own_group=0 sigpipe_ignored=1 env=-\n");
	c = (struct sl_run_command){0};
	report(&c, line, sizeof(line));
	assert_string_equal(line, "pdeathsig=0 own_group=0 sigpipe_ignored=1 env=-\n");
	signal(SIGPIPE, old);
}

/* Whether pid has ended: gone, or a zombie its new parent has not reaped. */
static int ended(int pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static void parent_death_signal_is_sent(void **state)
{
	(void)state;
	char *argv[] = {"/proc/self/exe", HELPER_ORPHAN, NULL};
	struct sl_run_command c = {.argv = argv, .out = SL_RUN_COMMAND_PIPE};
	char *text = NULL;
	assert_int_equal(sl_run_command_start(&c, NULL), 0);
	assert_int_equal(sl_run_command_capture(&c, 60, 100, &text, NULL), 0);
	assert_int_equal(c.status, 0);
	int pid = atoi(text);
	free(text);
	assert_true(pid > 0);
	double start = sl_now_s();
	while (!ended(pid) && sl_now_s() - start < 20)
		usleep(20000);
	int gone = ended(pid);
	if (!gone)
		kill(pid, SIGKILL);
	assert_true(gone);
}

static void pipes_are_not_inherited(void **state)
{
	(void)state;
	/* a first child's pipe, then a second child that looks for its descriptor */
	char *first[] = {"sh", "-c", "exec sleep 30", NULL};
	struct sl_run_command a = {.argv = first, .use_path = 1, .out = SL_RUN_COMMAND_PIPE};
	assert_int_equal(sl_run_command_start(&a, NULL), 0);
	assert_true(a.out_fd > 2);
	char script[128];
	snprintf(script, sizeof(script), "if [ -e /proc/$$/fd/%d ]; then echo held; else echo "
		 "clean; fi", a.out_fd);
	char *second[] = {"sh", "-c", script, NULL};
	struct sl_run_command b = {.argv = second, .use_path = 1, .out = SL_RUN_COMMAND_PIPE};
	char *text = NULL;
	assert_int_equal(sl_run_command_start(&b, NULL), 0);
	assert_int_equal(sl_run_command_capture(&b, 60, 100, &text, NULL), 0);
	assert_string_equal(text, "clean\n");
	free(text);
	sl_run_command_kill(&a, SIGKILL);
	sl_run_command_close(&a);
	assert_int_equal(sl_run_command_wait(&a), 128 + SIGKILL);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], HELPER_REPORT))
		return helper_report();
	if (argc == 2 && !strcmp(argv[1], HELPER_ORPHAN))
		return helper_orphan();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exit_status_and_signal),
		cmocka_unit_test(output_streams_and_environment),
		cmocka_unit_test(exec_failure_returned_or_printed),
		cmocka_unit_test(deadline_then_signal),
		cmocka_unit_test(child_setup_as_asked),
		cmocka_unit_test(parent_death_signal_is_sent),
		cmocka_unit_test(pipes_are_not_inherited),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
