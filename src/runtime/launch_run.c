/* Running a job of ranks on given hosts of a cluster file and waiting for it (launch_run.h). */
#include "runtime/launch_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/launch.h"
#include "plan/roles.h"
#include "runtime/start_failure.h"
#include "util/clock.h"
#include "util/log.h"

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

/* One run of cmd: its output copied to out_fd and err_fd and fed to w; *status its exit status
 * (128 + signal); SL_ETIMEOUT past timeout_s (SIGTERM, then SIGKILL 3 s later). */
static int exec_once(const struct sl_launch_cmd *cmd, int timeout_s, int out_fd, int err_fd,
		     const char *who, struct sl_start_watch *w, int *status, struct sl_err *err)
{
	int pipes[2][2];
	if (pipe2(pipes[0], O_CLOEXEC))
		return sl_err_set(err, SL_EIO, "cannot create a pipe: %s", strerror(errno));
	if (pipe2(pipes[1], O_CLOEXEC)) {
		close(pipes[0][0]);
		close(pipes[0][1]);
		return sl_err_set(err, SL_EIO, "cannot create a pipe: %s", strerror(errno));
	}
	pid_t parent = getpid(), pid = fork();
	if (pid < 0) {
		for (int i = 0; i < 2; i++) {
			close(pipes[i][0]);
			close(pipes[i][1]);
		}
		return sl_err_set(err, SL_EIO, "cannot fork mpirun: %s", strerror(errno));
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		dup2(pipes[0][1], STDOUT_FILENO);
		dup2(pipes[1][1], STDERR_FILENO);
		struct sl_err e = {0};
		if (sl_launch_setenv(cmd, &e)) {
			fprintf(stderr, "%s: %s\n", who, e.msg);
			_exit(127);
		}
		execvp(cmd->argv[0], cmd->argv);
		fprintf(stderr, "%s: cannot start '%s': %s\n", who, cmd->argv[0], strerror(errno));
		_exit(127);
	}
	close(pipes[0][1]);
	close(pipes[1][1]);
	struct pollfd fds[2] = {{pipes[0][0], POLLIN, 0}, {pipes[1][0], POLLIN, 0}};
	int to[2] = {out_fd, err_fd};
	struct lines lines[2];
	lines[0].used = lines[1].used = 0;
	char buf[8192];
	/* bounded: mpirun is stopped after timeout_s */
	double deadline = sl_now_s() + timeout_s, drain_until = 0;
	int killed = 0, exited = 0;
	while (fds[0].fd >= 0 || fds[1].fd >= 0) {
		int n = poll(fds, 2, 50);
		for (int i = 0; i < 2 && n > 0; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t got = read(fds[i].fd, buf, sizeof(buf));
			if (got > 0) {
				copy_out(to[i], buf, (size_t)got);
				take(&lines[i], i, buf, (size_t)got, w);
			} else if (got == 0 || errno != EINTR) {
				close(fds[i].fd);
				fds[i].fd = -1;
			}
		}
		if (!exited && waitpid(pid, status, WNOHANG) == pid) {
			exited = 1;
			/* a daemon mpirun left may hold the pipes: take what is there, not more */
			drain_until = sl_now_s() + 1.0;
		}
		if (exited && sl_now_s() > drain_until)
			break;
		if (!exited && !killed && sl_now_s() > deadline) {
			kill(pid, SIGTERM);
			killed = 1;
			deadline = sl_now_s() + 3;
		} else if (!exited && killed == 1 && sl_now_s() > deadline) {
			kill(pid, SIGKILL);
			killed = 2;
		}
	}
	for (int i = 0; i < 2; i++) {
		if (fds[i].fd >= 0)
			close(fds[i].fd);
		if (lines[i].used)
			take(&lines[i], i, "\n", 1, w);
	}
	while (!exited && waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	*status = WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
	if (killed)
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
