/* srun command and placement check (launch_slurm.h). */
#include "runtime/launch_slurm.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster/slurm.h"
#include "util/clock.h"

#define NAME_BYTES 256 /* a node name as the ranks exchange it (SL_CLUSTER_NAME_MAX fits) */

void sl_launch_slurm_job_name(int launcher_pid, char *buf, size_t size)
{
	snprintf(buf, size, "sailor-run-%d", launcher_pid);
}

int sl_launch_slurm_end(const char *job_name, double timeout_s, struct sl_err *err)
{
	int rc = sl_slurm_cancel_name(job_name, NULL, err);
	if (rc)
		return rc;
	double t0_s = sl_now_s();
	for (;;) {
		int left = sl_slurm_jobs_named(job_name);
		if (left == 0)
			return 0;
		if (sl_now_s() - t0_s > timeout_s)
			return sl_err_set(err, SL_ETIMEOUT, "slurm: job '%s' is still in squeue %.0f "
					  "s after scancel%s", job_name, timeout_s,
					  left < 0 ? " (squeue fails)" : "");
		struct timespec ts = {0, 200 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

/* Children of this process, from /proc (at most max). */
static int children(pid_t *out, int max)
{
	int n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	pid_t self = getpid();
	for (struct dirent *e; n < max && (e = readdir(d));) {
		int pid = atoi(e->d_name);
		if (pid <= 0)
			continue;
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t got = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[got] = 0;
		const char *p = strrchr(buf, ')');
		int ppid;
		if (p && sscanf(p + 1, " %*c %d", &ppid) == 1 && ppid == self)
			out[n++] = pid;
	}
	closedir(d);
	return n;
}

int sl_launch_slurm_reap_children(double timeout_s)
{
	double t0_s = sl_now_s();
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		pid_t left[64];
		int n = children(left, 64);
		if (n == 0)
			return 0;
		if (sl_now_s() - t0_s > timeout_s) {
			for (int i = 0; i < n; i++) {
				kill(left[i], SIGKILL);
				waitpid(left[i], NULL, 0);
			}
			return n;
		}
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dupf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

int sl_launch_slurm_build(const struct sl_role_table *table, const struct sl_cluster *cluster,
			  const struct sl_launch_slurm_opts *opts, const char *const *worker_argv,
			  struct sl_launch_cmd *out, struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!worker_argv || !worker_argv[0] || !opts->dir || !opts->job_name)
		return sl_err_set(err, SL_EINPUT, "slurm launch: no worker, folder or job name");
	int world = table->world_size, n_hosts = cluster->host_count;
	for (int r = 0; r < world; r++)
		if (table->roles[r].host < 0 || table->roles[r].host >= n_hosts)
			return sl_err_set(err, SL_EINPUT, "slurm launch: rank %d has no node; place "
					  "the ranks first", r);
	/* SLURM_HOSTFILE: line r = node of rank r */
	if (snprintf(out->hostfile, sizeof(out->hostfile), "%s/%s", opts->dir,
		     SL_LAUNCH_SLURM_HOSTFILE) >= (int)sizeof(out->hostfile))
		return sl_err_set(err, SL_EINPUT, "slurm launch: folder '%s': path too long",
				  opts->dir);
	FILE *f = fopen(out->hostfile, "w");
	if (!f)
		return sl_err_set(err, SL_EIO, "cannot write '%s': %s", out->hostfile,
				  strerror(errno));
	for (int r = 0; r < world; r++)
		fprintf(f, "%s\n", cluster->hosts[table->roles[r].host].name);
	if (fclose(f))
		return sl_err_set(err, SL_EIO, "cannot write '%s': %s", out->hostfile,
				  strerror(errno));
	/* the distinct nodes, in first-rank order */
	char *used = calloc((size_t)n_hosts, 1);
	size_t list_size = 1;
	for (int h = 0; h < n_hosts; h++)
		list_size += strlen(cluster->hosts[h].name) + 1;
	char *list = calloc(list_size, 1);
	int argc_max = 32, worker_count = 0;
	while (worker_argv[worker_count])
		worker_count++;
	char **argv = calloc((size_t)(argc_max + worker_count + 1), sizeof(char *));
	char **env = calloc(4, sizeof(char *));
	if (!used || !list || !argv || !env) {
		free(used);
		free(list);
		free(argv);
		free(env);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	int nodes = 0;
	for (int r = 0; r < world; r++) {
		int h = table->roles[r].host;
		if (used[h])
			continue;
		used[h] = 1;
		nodes++;
		if (list[0])
			strcat(list, ",");
		strcat(list, cluster->hosts[h].name);
	}
	free(used);
	int threads = opts->threads_per_rank > 0 ? opts->threads_per_rank : 1;
	char num[32], nodes_s[32], threads_s[32];
	snprintf(num, sizeof(num), "%d", world);
	snprintf(nodes_s, sizeof(nodes_s), "%d", nodes);
	snprintf(threads_s, sizeof(threads_s), "%d", threads);
	int n = 0;
	argv[n++] = strdup("srun");
	argv[n++] = strdup("--mpi=pmix");
	argv[n++] = dupf("--job-name=%s", opts->job_name);
	if (opts->partition)
		argv[n++] = dupf("--partition=%s", opts->partition);
	argv[n++] = dupf("--ntasks=%s", num);
	argv[n++] = dupf("--nodes=%s", nodes_s);
	argv[n++] = strdup("--distribution=arbitrary");
	argv[n++] = strdup("--kill-on-bad-exit=1");
	argv[n++] = dupf("--export=ALL,OMP_NUM_THREADS=%s,OPENBLAS_NUM_THREADS=%s", threads_s,
			 threads_s);
	for (int i = 0; i < worker_count; i++)
		argv[n++] = strdup(worker_argv[i]);
	argv[n] = NULL;
	env[0] = dupf("SLURM_HOSTFILE=%s", out->hostfile);
	free(list);
	int failed = !env[0];
	for (int i = 0; i < n; i++)
		failed |= !argv[i];
	out->argv = argv;
	out->argc = n;
	out->env = env;
	if (failed) {
		unlink(out->hostfile);
		sl_launch_cmd_free(out);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	return 0;
}

static const char *gpu_name(const struct sl_catalogue *cat, int g)
{
	return g >= 0 && g < cat->gpu_count ? cat->gpus[g].name : "?";
}

static const char *zone_name(const struct sl_catalogue *cat, int z)
{
	return z >= 0 && z < cat->zone_count ? cat->zones[z].name : "?";
}

int sl_launch_slurm_check_placement(const struct sl_role_table *table,
				    const struct sl_cluster *cluster, const struct sl_catalogue *cat,
				    struct sl_comm *comm, struct sl_err *err)
{
	char mine[NAME_BYTES] = "";
	const char *node = getenv("SLURMD_NODENAME");
	if (node && node[0])
		snprintf(mine, sizeof(mine), "%s", node);
	else if (gethostname(mine, sizeof(mine) - 1))
		snprintf(mine, sizeof(mine), "?");
	if (comm->size != table->world_size)
		return sl_err_set(err, SL_EINPUT, "the job has %d ranks, the plan %d: start it with "
				  "%d tasks", comm->size, table->world_size, table->world_size);
	char *all = calloc((size_t)comm->size, NAME_BYTES);
	if (!all)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	int rc = sl_comm_allgather(comm, &comm->world, mine, all, NAME_BYTES, SL_COMM_BYTE, err);
	const char *where = cluster->path[0] ? cluster->path : "the cluster";
	for (int r = 0; !rc && r < comm->size; r++) {
		const char *name = all + (size_t)r * NAME_BYTES;
		const struct sl_role *x = &table->roles[r];
		int h = -1;
		for (int i = 0; i < cluster->host_count && h < 0; i++)
			if (!strcmp(cluster->hosts[i].name, name))
				h = i;
		char role[200];
		snprintf(role, sizeof(role), "rank %d (stage %d, pipeline %d, tp rank %d of %d: %s in "
			 "%s)", r, x->stage, x->pipeline, x->tp_rank, x->tp, gpu_name(cat, x->gpu),
			 zone_name(cat, x->zone));
		if (h < 0) {
			rc = sl_err_set(err, SL_EINPUT, "placement: %s runs on '%s', which is not a "
					"node of %s; start the job on the plan's nodes (sailor run "
					"--slurm places every rank)", role, name, where);
		} else if (cluster->hosts[h].gpu != x->gpu || cluster->hosts[h].zone != x->zone) {
			rc = sl_err_set(err, SL_EINPUT, "placement: %s runs on node '%s', which is %s "
					"in %s; the allocation does not match the plan: start it "
					"with sailor run --slurm (it places every rank), or with "
					"srun --distribution=arbitrary and a SLURM_HOSTFILE naming a "
					"%s node of %s for this rank", role, name,
					gpu_name(cat, cluster->hosts[h].gpu),
					zone_name(cat, cluster->hosts[h].zone), gpu_name(cat, x->gpu),
					zone_name(cat, x->zone));
		} else if (x->tp_rank > 0) {
			int first = table->replica_first_rank[x->stage * table->num_pipelines +
							     x->pipeline];
			const char *lead = all + (size_t)first * NAME_BYTES;
			if (strcmp(lead, name))
				rc = sl_err_set(err, SL_EINPUT, "placement: %s runs on node '%s', "
						"but TP rank 0 of its replica (rank %d) runs on '%s'; "
						"a TP group shares one node", role, name, first, lead);
		}
	}
	free(all);
	return rc;
}
