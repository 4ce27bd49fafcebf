/* Running a job of ranks on given hosts of a cluster file and waiting for it (launch_run.h). */
#include "runtime/launch_run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/launch.h"
#include "runtime/roles.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
	pid_t parent = getpid(), pid = -1;
	if (!rc && (pid = fork()) < 0)
		rc = sl_err_set(err, SL_EIO, "cannot fork mpirun: %s", strerror(errno));
	if (!rc && pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		struct sl_err e = {0};
		if (sl_launch_setenv(&cmd, &e)) {
			fprintf(stderr, "%s: %s\n", who, e.msg);
			_exit(127);
		}
		execvp(cmd.argv[0], cmd.argv);
		fprintf(stderr, "%s: cannot start '%s': %s\n", who, cmd.argv[0], strerror(errno));
		_exit(127);
	}
	if (!rc) {
		/* bounded: mpirun is stopped after timeout_s */
		double deadline = now_s() + timeout_s;
		int status = 0, killed = 0;
		for (;;) {
			pid_t got = waitpid(pid, &status, WNOHANG);
			if (got == pid || (got < 0 && errno != EINTR))
				break;
			if (!killed && now_s() > deadline) {
				kill(pid, SIGTERM);
				killed = 1;
				deadline = now_s() + 3;
			} else if (killed == 1 && now_s() > deadline) {
				kill(pid, SIGKILL);
				killed = 2;
			}
			struct timespec ts = {0, 50 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		if (killed)
			rc = sl_err_set(err, SL_ETIMEOUT, "the job took longer than %d s and was "
					"stopped", timeout_s);
		else if (!WIFEXITED(status) || WEXITSTATUS(status))
			rc = sl_err_set(err, SL_EIO, "the ranks failed (mpirun exit status "
					"%d; their messages are above)",
					WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
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
