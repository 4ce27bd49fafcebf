/* Running a job of ranks on given hosts of a cluster file and waiting for it (launch_run.h). */
#include "runtime/launch_run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/launch.h"
#include "plan/roles.h"
#include "runtime/start_failure.h"
#include "util/log.h"
#include "util/run_command.h"

/* Copies n bytes to fd (the caller's stdout or stderr), whole. */
static void copy_out(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t put = write(fd, buf, n);
		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0)
			return;
		buf += put;
		n -= (size_t)put;
	}
}

struct lines {
	char text[4096];
	size_t used;
};

static void take(struct lines *l, int is_stderr, const char *buf, size_t n,
		 struct sl_start_watch *w)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n' || l->used + 1 >= sizeof(l->text)) {
			l->text[l->used] = 0;
			sl_start_watch_line(w, is_stderr, l->text);
			l->used = 0;
		} else {
			l->text[l->used++] = buf[i];
		}
	}
}

/* Where exec_once sends mpirun's output: copied to to[0] (stdout) and to[1] (stderr), and fed
 * line by line to the start watch. */
struct feed {
	int to[2];
	struct lines lines[2];
	struct sl_start_watch *w;
};

/* An sl_run_command_output_fn. */
static void feed_bytes(void *ctx, int is_stderr, const char *buf, size_t n)
{
	struct feed *f = ctx;
	copy_out(f->to[is_stderr], buf, n);
	take(&f->lines[is_stderr], is_stderr, buf, n, f->w);
}

/* One run of cmd: its output copied to out_fd and err_fd and fed to w; *status its exit status
 * (128 + signal); SL_ETIMEOUT past timeout_s (SIGTERM, then SIGKILL 3 s later). */
static int exec_once(const struct sl_launch_cmd *cmd, int timeout_s, int out_fd, int err_fd,
		     const char *who, struct sl_start_watch *w, int *status, struct sl_err *err)
{
	struct sl_run_command child = {
		.argv = cmd->argv, .use_path = 1, .env = cmd->env,
		.out = SL_RUN_COMMAND_PIPE, .err = SL_RUN_COMMAND_PIPE,
		.parent_death_signal = SIGTERM, .who = who,
	};
	int rc = sl_run_command_start(&child, err);
	if (rc)
		return rc;
	struct feed f = {.to = {out_fd, err_fd}, .w = w};
	/* bounded: mpirun is stopped after timeout_s */
	*status = sl_run_command_finish(&child, timeout_s, 3.0, feed_bytes, &f);
	for (int i = 0; i < 2; i++)
		if (f.lines[i].used)
			take(&f.lines[i], i, "\n", 1, w);
	if (child.timed_out)
		return sl_err_set(err, SL_ETIMEOUT, "the job took longer than %d s and was stopped",
				  timeout_s);
	return 0;
}

int sl_launch_exec(const struct sl_launch_cmd *cmd, int timeout_s, int out_fd, int err_fd,
		   const char *who, struct sl_err *err)
{
	int status = 0;
	struct sl_start_watch w;
	memset(&w, 0, sizeof(w));
	int rc = exec_once(cmd, timeout_s, out_fd, err_fd, who, &w, &status, err);
	if (!rc && sl_start_watch_retry(&w, status)) {
		sl_log_warn("%s: mpirun did not start the job: %s (exit status %d); starting it once "
			    "more", who, w.reason, status);
		memset(&w, 0, sizeof(w));
		rc = exec_once(cmd, timeout_s, out_fd, err_fd, who, &w, &status, err);
	}
	if (!rc && status)
		rc = sl_err_set(err, SL_EIO, "the ranks failed (mpirun exit status %d%s%s; their "
				"messages are above)", status, w.reason[0] ? ": " : "", w.reason);
	return rc;
}

int sl_launch_run_on_hosts(const struct sl_cluster *cluster, const int *rank_host, int world,
			   int timeout_s, const char *const *worker_argv, const char *who,
			   struct sl_err *err)
{
	struct sl_role_table table;
	struct sl_launch_cmd cmd;
	memset(&table, 0, sizeof(table));
	memset(&cmd, 0, sizeof(cmd));
	char mpirun[4096], dir[] = "/tmp/sailor-launch-XXXXXX";
	int have_dir = 0;
	int rc = sl_launch_find_mpirun(mpirun, sizeof(mpirun), err);
	if (!rc) {
		table.world_size = world;
		table.roles = calloc((size_t)world, sizeof(*table.roles));
		if (!table.roles)
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
		for (int r = 0; !rc && r < world; r++) {
			table.roles[r].rank = r;
			table.roles[r].host = rank_host[r];
			table.roles[r].tp = 1;
			table.roles[r].gpu = cluster->hosts[rank_host[r]].gpu;
			table.roles[r].zone = cluster->hosts[rank_host[r]].zone;
		}
	}
	if (!rc) {
		if (mkdtemp(dir))
			have_dir = 1;
		else
			rc = sl_err_set(err, SL_EIO, "cannot create '%s': %s", dir, strerror(errno));
	}
	if (!rc) {
		struct sl_launch_opts lo = {.mpirun = mpirun, .dir = dir, .threads_per_rank = 1};
		rc = sl_launch_build(&table, cluster, &lo, worker_argv, &cmd, err);
	}
	if (!rc)
		rc = sl_launch_exec(&cmd, timeout_s, STDOUT_FILENO, STDERR_FILENO, who, err);
	if (cmd.hostfile[0])
		unlink(cmd.hostfile);
	if (cmd.rankfile[0])
		unlink(cmd.rankfile);
	if (have_dir)
		rmdir(dir);
	sl_launch_cmd_free(&cmd);
	free(table.roles);
	return rc;
}
