/* `sailor run`: trains across processes (and hosts) the way a plan says.
 *
 * Two roles in one binary:
 *   launcher  started by a person: checks the plan, the model, the data and the cluster, places
 *             every replica on a host (placement.h), and starts the ranks with mpirun
 *             (launch.h), which runs this same command line in each; it forwards their output,
 *             and when a rank dies it stops the job and says which rank, role, host and step.
 *   worker    started by mpirun (or by hand with `mpirun -np R sailor run ...`, or by Slurm's
 *             srun): it finds itself inside an MPI job and runs its rank (runner.h).
 * Nothing is started when a check fails; mpirun ends every rank when one dies. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/islands_summary.h"
#include "cli/train_args.h"
#include "cluster/catalogue.h"
#include "cluster/cluster_file.h"
#include "cluster/slurm.h"
#include "runtime/comm.h"
#include "runtime/launch.h"
#include "runtime/launch_slurm.h"
#include "plan/placement.h"
#include "plan/roles.h"
#include "runtime/runner.h"
#include "runtime/start_failure.h"
#include "train/progress.h"
#include "util/atomic_file.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/run_command.h"

static int run_run(int argc, char **argv);

enum {
	OPT_PLAN = SL_TOPT_COUNT, OPT_CLUSTER, OPT_THREADS_PER_RANK, OPT_DRY_RUN, OPT_GPUS, OPT_ZONES,
	OPT_EVENTS_FILE, OPT_SLURM, OPT_PARTITION, OPT_TIMELINE
};

static const struct sl_cli_option options[] = {
	SL_CLI_TRAIN_OPTIONS,
	[OPT_PLAN] = {"plan", 'p', "FILE", "the plan to execute (sailor.plan/1, e.g. from sailor "
		      "plan -o)", NULL},
	[OPT_CLUSTER] = {"cluster", 'c', "FILE", "hosts with their GPU type, zone and slots "
			 "(sailor.cluster/1)", "every rank on this host"},
	[OPT_THREADS_PER_RANK] = {"threads-per-rank", 't', "T", "CPU threads of each rank", "1"},
	[OPT_DRY_RUN] = {"dry-run", 0, NULL, "print the ranks' roles and the mpirun command, start "
			 "nothing", NULL},
	/* a setting of the process (catalogue.h): the launcher's checks and every rank, which
	 * runs this same command line, load the catalogue with it */
	[OPT_GPUS] = {"gpus", 0, "FILE", SL_CLI_GPUS_HELP, "none"},
	[OPT_ZONES] = {"zones", 0, "FILE", SL_CLI_ZONES_HELP, "none"},
	[OPT_EVENTS_FILE] = {"events-file", 0, "FILE", "rank 0 also appends each step line it "
			     "prints, as JSON, to FILE (on its host; flushed per line)", "none"},
	[OPT_SLURM] = {"slurm", 0, NULL, "start the ranks with srun --mpi=pmix as one Slurm job on "
		       "the nodes the placement chose (hosts: Slurm's usable nodes, or --cluster); "
		       "under srun, every rank checks it runs on a node of its replica's GPU type "
		       "and zone", NULL},
	[OPT_PARTITION] = {"partition", 0, "P", "with --slurm: the Slurm partition", "Slurm's "
			   "default"},
	[OPT_TIMELINE] = {"timeline", 0, "FILE", "record when each rank ran each instruction of "
			  "every step and write it to FILE at the end (rank 0, on its host; "
			  "schema sailor.timeline/1, Chrome trace events: compare it with "
			  "`sailor simulate --timeline`, or open it in Perfetto)", "none"},
};

const struct sl_cli_command sl_cmd_run = {
	.name = "run",
	.synopsis = "--plan PLAN --data FILE [--model M] [--cluster FILE] [--threads-per-rank T] "
		    "[--steps N] [options]",
	.summary = "train across processes and hosts as a plan says (MPI)",
	.description =
		"Executes a plan: one rank per GPU of the plan (a replica of TP degree t is t ranks "
		"on one\nhost), pipeline stages with the 1F1B schedule, tensor parallelism per "
		"replica, data-parallel\nreplicas of different TP degrees, uneven micro-batch "
		"counts. Each step trains exactly the\nsamples single-process `sailor train` trains "
		"with the same global batch and seed. Started\nby a person it launches the ranks with "
		"mpirun; inside an MPI job (mpirun -np R, srun) it\nruns as that rank. The micro-batch "
		"and global batch come from the plan (--global-batch\noverrides a plan that gives "
		"none). Checkpoints are plan-independent: resume under any plan\nor with sailor "
		"train.",
	.options = options,
	.option_count = sizeof(options) / sizeof(options[0]),
	.run = run_run,
};

static const char *host_name(const struct sl_cluster *cluster, int host)
{
	return host < 0 || !cluster ? "this host" : cluster->hosts[host].name;
}

/* The launcher's watch over mpirun: output passes through; the last step printed and the death
 * report of mpirun are remembered to name the failing rank. */
struct watch {
	long long last_step;
	int dead_rank, dead_signal, dead_exit;
	char failed_node[256];   /* srun: "Node failure on NODE" (srun may still exit 0) */
	char line[2][4096];
	size_t used[2];
	struct sl_start_watch start;   /* did mpirun fail to start the job? (start_failure.h) */
};

static void scan_line(struct watch *w, const char *line)
{
	long long step;
	static const char step_key[] = "\"event\":\"step\",\"step\":";
	const char *p = strstr(line, step_key);
	if (p && sscanf(p + sizeof(step_key) - 1, "%lld", &step) == 1)
		w->last_step = step;
	else if (sscanf(line, "step %lld/", &step) == 1)
		w->last_step = step;
	int rank, pid, sig;
	/* OpenMPI 4: "mpirun noticed that process rank 1 with PID 123 on node x exited on signal 9" */
	p = strstr(line, "process rank ");
	if (p && w->dead_rank < 0) {
		const char *on = strstr(p, "exited on signal ");
		if (sscanf(p, "process rank %d with PID %d", &rank, &pid) == 2) {
			w->dead_rank = rank;
			if (on && sscanf(on, "exited on signal %d", &sig) == 1)
				w->dead_signal = sig;
		}
	}
	/* srun: "srun: error: NODE: task 2: Killed", "srun: error: NODE: tasks 2-3: Exited with
	 * exit code 1"; the first one names the rank that failed first */
	p = strstr(line, "srun: error: Node failure on ");
	if (p && !w->failed_node[0])
		sscanf(p + 29, "%255s", w->failed_node);
	p = strstr(line, "srun: error: ");
	if (p && w->dead_rank < 0) {
		char node[256];
		if (sscanf(p + 13, "%255[^:]: task %d", node, &rank) == 2 ||
		    sscanf(p + 13, "%255[^:]: tasks %d", node, &rank) == 2) {
			w->dead_rank = rank;
			if (strstr(p, ": Killed"))
				w->dead_signal = SIGKILL;
		}
	}
	/* "Primary job terminated normally, but 1 process returned a non-zero exit code" comes with
	 * "Process name: [[x,y],R]" and "Exit code: N" */
	p = strstr(line, "Process name: [[");
	if (p && w->dead_rank < 0) {
		const char *comma = strrchr(p, ',');
		if (comma && sscanf(comma + 1, "%d]", &rank) == 1)
			w->dead_rank = rank;
	}
}

/* An sl_run_command_output_fn: which 0 is mpirun's stdout, 1 its stderr. */
static void pass_through(void *ctx, int which, const char *buf, size_t n)
{
	struct watch *w = ctx;
	FILE *to = which ? stderr : stdout;
	fwrite(buf, 1, n, to);
	fflush(to);
	for (size_t i = 0; i < n; i++) {
		char c = buf[i];
		if (c == '\n' || w->used[which] + 1 >= sizeof(w->line[which])) {
			w->line[which][w->used[which]] = 0;
			scan_line(w, w->line[which]);
			sl_start_watch_line(&w->start, which == 1, w->line[which]);
			w->used[which] = 0;
		} else {
			w->line[which][w->used[which]++] = c;
		}
	}
}

static volatile sig_atomic_t launcher_signal;
/* Under Slurm: the job's name; a SIGTERM/SIGINT goes to its tasks with scancel --signal (srun,
 * given SIGTERM, cancels the step before any rank could checkpoint: launch_slurm.h) */
static const char *slurm_job;
static void on_launcher_signal(int sig) { launcher_signal = sig; }

/* The liveness probe of `sailor control` (ctl/generation_process.h): SIGUSR1 to the launcher goes on to
 * mpirun, which forwards it to every rank of the job (OpenMPI forwards SIGUSR1 and SIGUSR2), and
 * every rank that still runs answers at once from its handler with one line on its stdout. A
 * rank that is stopped, or whose host no longer answers, stays silent. */
static volatile pid_t probe_forward_pid;
static void on_launcher_probe(int sig)
{
	int saved = errno;
	if (probe_forward_pid > 0)
		kill(probe_forward_pid, sig);
	errno = saved;
}

static char probe_answer[64];
static size_t probe_answer_len;
static void on_rank_probe(int sig)
{
	(void)sig;
	int saved = errno;
	/* one write(2) of a short line: atomic on a pipe, never inside another rank's line */
	if (write(STDOUT_FILENO, probe_answer, probe_answer_len) < 0) {
		/* nobody listens: nothing to do */
	}
	errno = saved;
}

static void install_probe_handler(void (*handler)(int))
{
	struct sigaction sa = {0};
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}

/* Starts mpirun and waits for it; returns its exit status (or 128 + signal). */
static int start_and_watch(const struct sl_launch_cmd *cmd, struct watch *w, struct sl_err *err)
{
	/* Whoever reads our output may die first (the controller, killed): the launcher must not
	 * die of the next line it passes on, since it is the one that stops the job with a
	 * checkpoint and, while it runs, holds the controller's lock (ctl/run_lock.h). Killed by
	 * SIGPIPE it left mpirun and its ranks training on beside the next controller (issue 20,
	 * bench/chaos.sh). */
	signal(SIGPIPE, SIG_IGN);
	/* mpirun gets SIGPIPE back, and SIGUSR1 until it sets its own (on_launcher_probe is ours) */
	static const int child_defaults[] = {SIGPIPE, SIGUSR1, 0};
	struct sl_run_command child = {
		.argv = cmd->argv, .use_path = 1, .env = cmd->env,
		.out = SL_RUN_COMMAND_PIPE, .err = SL_RUN_COMMAND_PIPE,
		/* mpirun (and through it every rank) ends when the launcher dies */
		.parent_death_signal = SIGTERM,
		.default_signals = child_defaults, .who = "sailor run",
	};
	int rc = sl_run_command_start(&child, err);
	if (rc)
		return rc;
	probe_forward_pid = child.pid;
	struct sigaction sa = {0}, old_int, old_term;
	sa.sa_handler = on_launcher_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	int forwarded = 0;
	double forwarded_s = 0;
	for (int open_count = 2; open_count > 0;) {
		if (launcher_signal && slurm_job && (!forwarded || sl_now_s() - forwarded_s > 5)) {
			/* again every 5 s: tasks not started yet when it was sent did not get it */
			struct sl_err e = {0};
			if (sl_slurm_cancel_name(slurm_job, "TERM", &e))
				sl_log_warn("%s", e.msg);
			/* a job still queued (a node it needs is drained or busy) has no task to
			 * stop and may wait forever, srun with it: nothing ran, so it is cancelled
			 * (bench/chaos_slurm.sh: a launcher whose controller was killed waited so,
			 * holding the run directory from the next controller) */
			e = (struct sl_err){0};
			if (sl_slurm_cancel_pending(slurm_job, &e))
				sl_log_warn("%s", e.msg);
			forwarded = 1;
			forwarded_s = sl_now_s();
		} else if (launcher_signal && !forwarded) {
			kill(child.pid, SIGTERM); /* mpirun forwards it to every rank */
			forwarded = 1;
		}
		open_count = sl_run_command_read(&child, 200, pass_through, w);
	}
	sl_run_command_close(&child);
	/* our SIGTERM and SIGINT interrupt the wait (no SA_RESTART): pass them on first */
	while (sl_run_command_reap(&child, 1) < 0 && errno == EINTR)
		if (launcher_signal && !forwarded && !slurm_job) {
			kill(child.pid, SIGTERM);
			forwarded = 1;
		}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	probe_forward_pid = 0;
	return child.status;
}

/* --dry-run: where each rank goes, the islands and what their outer steps send, and the
 * command that would start them. */
static int print_dry_run(const struct sl_run_options *o, const struct sl_role_table *table,
			 const struct sl_catalogue *cat, const struct sl_cluster *cluster,
			 const struct sl_launch_cmd *cmd, const struct sl_runner_checked *c,
			 struct sl_err *err)
{
	/* the islands block is counted first: a command that fails prints nothing on stdout */
	char *islands = NULL;
	size_t islands_len = 0;
	FILE *mem = open_memstream(&islands, &islands_len);
	if (!mem)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	int rc = sl_cli_islands_summary(mem, &c->plan, &c->model, c->global_batch, c->seq_len,
					cat, err);
	fclose(mem);
	if (rc) {
		free(islands);
		return rc;
	}
	printf("ranks (stage, pipeline, tp rank / tp, layers, gpu, zone, host):\n");
	for (int r = 0; r < table->world_size; r++) {
		const struct sl_role *x = &table->roles[r];
		printf("  rank %-4d stage %d pipeline %d tp %d/%d layers %d-%d %s %s %s\n", r,
		       x->stage, x->pipeline, x->tp_rank, x->tp, x->first_layer, x->last_layer,
		       cat->gpus[x->gpu].name, cat->zones[x->zone].name, host_name(cluster, x->host));
	}
	fputs(islands, stdout);
	free(islands);
	if (o->slurm)
		printf("environment: %s\n", cmd->env[0]);
	printf("command:");
	for (int i = 0; i < cmd->argc; i++)
		printf(" %s", cmd->argv[i]);
	printf("\n");
	return 0;
}

/* --events-file and --timeline, which rank 0 writes on its host: a bad path fails now, before
 * anything starts, not after the run. Says what is wrong; the error code. */
static int check_output_files(const struct sl_run_options *o)
{
	if (o->events_file) {
		FILE *f = fopen(o->events_file, "a");
		if (!f) {
			sl_cli_error(&sl_cmd_run, "cannot append to events file '%s': %s",
				     o->events_file, strerror(errno));
			return SL_EIO;
		}
		fclose(f);
	}
	struct sl_err err = {0};
	int rc = o->timeline ? sl_atomic_check(o->timeline, "timeline", &err) : 0;
	if (rc)
		sl_cli_error(&sl_cmd_run, "%s", err.msg);
	return rc;
}

/* Slurm: after srun, its helpers reaped and whatever of the job is left cancelled. */
static void slurm_tear_down(const char *job_name)
{
	int killed = sl_launch_slurm_reap_children(3.0);
	if (killed)
		sl_log_warn("%d of srun's processes did not end within 3 s: killed", killed);
	/* srun has ended; whatever of its job is left (a step on a node that stopped
	 * answering) goes with it */
	struct sl_err e = {0};
	if (sl_slurm_cancel_name(job_name, NULL, &e))
		sl_log_warn("%s", e.msg);
	slurm_job = NULL;
}

/* Under Slurm, a rank that exited with an error (no signal) while no node failure was reported
 * is often a survivor of a node that died: its MPI connections to the dead node's ranks broke
 * before Slurm noticed the node (SlurmdTimeout), and srun ended the step on its exit code. So
 * ask Slurm, for up to NODE_DEATH_WAIT_S, whether a node of the job is down or not responding,
 * and name that node (the controller blames the host named in the failure line). A rank that
 * fails on a healthy node delays the report by that long. */
#define NODE_DEATH_WAIT_S 15.0
static void find_dead_node(const struct sl_run_options *o, const struct sl_cluster *cluster,
			   struct watch *w)
{
	sl_log_note("rank %d exited with an error: asking Slurm for up to %.0f s whether a node "
		    "of the job died", w->dead_rank, NODE_DEATH_WAIT_S);
	for (double start = sl_now_s(); sl_now_s() - start < NODE_DEATH_WAIT_S;) {
		struct sl_slurm_nodes nodes = {0};
		struct sl_err e = {0};
		if (sl_slurm_query(o->partition, &nodes, &e) == 0) {
			for (int i = 0; i < nodes.count && !w->failed_node[0]; i++) {
				int dead = sl_slurm_state_lost(nodes.nodes[i].state);
				for (int h = 0; dead && h < cluster->host_count; h++)
					if (!strcmp(cluster->hosts[h].name, nodes.nodes[i].name))
						snprintf(w->failed_node, sizeof(w->failed_node), "%s",
							 nodes.nodes[i].name);
			}
			sl_slurm_nodes_free(&nodes);
		}
		if (w->failed_node[0]) {
			sl_log_note("Slurm reports node %s of the job down or not responding",
				    w->failed_node);
			return;
		}
		struct timespec pause = {0, 500000000L};
		nanosleep(&pause, NULL);
	}
}

/* The job ended with status (nonzero, or a node Slurm lost): says how, naming the rank that
 * died and where (the controller reads that line); the error code, 0 if it did not fail.
 * cluster: NULL without one. */
static int report_failure(const struct sl_run_options *o, const struct sl_role_table *table,
			  const struct sl_catalogue *cat, const struct sl_cluster *cluster,
			  struct watch *w, int status, const struct sl_err *err)
{
	int rc = 0;
	if (w->failed_node[0]) {
		/* Slurm lost a node of the job: a failure even when srun exits 0; the first rank
		 * placed there is named (the controller takes the host from that line) */
		for (int r = 0; r < table->world_size && cluster; r++)
			if (!strcmp(cluster->hosts[table->roles[r].host].name, w->failed_node)) {
				w->dead_rank = r;
				w->dead_signal = 0;
				break;
			}
		if (status == 0)
			status = 1;
	}
	if (status < 0) {
		sl_cli_error(&sl_cmd_run, "%s", err->msg);
		rc = status;
	} else if (status != 0) {
		rc = SL_EIO;
		if (w->dead_rank >= 0 && w->dead_rank < table->world_size) {
			const struct sl_role *x = &table->roles[w->dead_rank];
			char how[64] = "failed";
			if (w->failed_node[0])
				snprintf(how, sizeof(how), "died (Slurm: node failure)");
			else if (w->dead_signal > 0)
				snprintf(how, sizeof(how), "died (signal %d, %s)", w->dead_signal,
					 strsignal(w->dead_signal));
			sl_cli_error(&sl_cmd_run, "rank %d (stage %d, pipeline %d, tp rank %d of %d, layers %d-%d, %s "
				     "in %s, on %s) %s during step %lld; the job was stopped%s%s",
				     w->dead_rank, x->stage, x->pipeline, x->tp_rank, x->tp,
				     x->first_layer, x->last_layer, cat->gpus[x->gpu].name,
				     cat->zones[x->zone].name,
				     host_name(cluster, x->host), how,
				     w->last_step + 1 > 0 ? w->last_step + 1 : 1,
				     o->train.ckpt_dir ? "; resume from the newest checkpoint with "
							 "--resume --ckpt-dir "
						       : "",
				     o->train.ckpt_dir ? o->train.ckpt_dir : "");
		} else if (launcher_signal) {
			sl_cli_error(&sl_cmd_run, "stopped by signal %d", (int)launcher_signal);
		} else {
			sl_cli_error(&sl_cmd_run, "the job failed (mpirun exit status %d)", status);
		}
	}
	return rc;
}

/* What the launcher builds before it starts anything: the ranks' roles, placed, and the command
 * that starts them (build_job); job_free releases it all, whatever build_job reached. */
struct job {
	struct sl_role_table table;
	struct sl_catalogue cat;
	struct sl_cluster cluster;
	struct sl_launch_cmd cmd;
	int have_cluster;        /* --cluster or --slurm: cluster holds the hosts */
	int made_rundir;
	char rundir[32];         /* the hostfile and rankfile of a cluster run */
	char job_name[64];       /* --slurm: the Slurm job's name */
	char mpirun[PATH_MAX];
	char self[PATH_MAX];     /* this binary: every rank runs it */
	char **worker;           /* the ranks' command line: self, then our own arguments */
};

/* Loads the hosts, places the ranks and builds the mpirun (or srun) command in j, whose table and
 * catalogue sl_runner_check_plan filled. */
static int build_job(const struct sl_run_options *o, int argc, char **argv, struct job *j,
		     struct sl_err *err)
{
	int rc = 0;
	if (o->cluster)
		rc = sl_cluster_load(o->cluster, &j->cat, &j->cluster, err);
	else if (o->slurm)
		rc = sl_slurm_usable_cluster(o->partition, &j->cat, &j->cluster, err);
	else
		sl_log_note("no --cluster: all %d ranks run on this host", j->table.world_size);
	if (!rc)
		rc = sl_placement_assign(&j->table, j->have_cluster ? &j->cluster : NULL, &j->cat, err);
	if (!rc && !o->slurm)
		rc = sl_launch_find_mpirun(j->mpirun, sizeof(j->mpirun), err);
	/* each rank runs this same command line, from this binary */
	ssize_t len = readlink("/proc/self/exe", j->self, sizeof(j->self) - 1);
	j->self[len > 0 ? len : 0] = 0;
	j->worker = calloc((size_t)argc + 2, sizeof(char *));
	if (!rc && !j->worker)
		rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	if (!rc && len <= 0)
		rc = sl_err_set(err, SL_EIO, "cannot find this program's own path (/proc/self/exe): "
				"the ranks must run the same binary");
	if (rc)
		return rc;
	j->worker[0] = j->self;
	for (int i = 0; i < argc; i++)
		j->worker[i + 1] = argv[i];
	/* the hostfile and rankfile of a cluster run live in a folder of their own */
	if (j->have_cluster && !(j->made_rundir = mkdtemp(j->rundir) != NULL))
		return sl_err_set(err, SL_EIO, "cannot create '%s': %s", j->rundir, strerror(errno));
	if (o->slurm) {
		sl_launch_slurm_job_name((int)getpid(), j->job_name, sizeof(j->job_name));
		struct sl_launch_slurm_opts so = {.dir = j->rundir, .job_name = j->job_name,
						  .partition = o->partition,
						  .threads_per_rank = o->threads_per_rank};
		return sl_launch_slurm_build(&j->table, &j->cluster, &so,
					     (const char *const *)j->worker, &j->cmd, err);
	}
	struct sl_launch_opts lo = {.mpirun = j->mpirun,
				    .dir = o->cluster ? j->rundir : NULL,
				    .threads_per_rank = o->threads_per_rank > 0
								? o->threads_per_rank : 1};
	return sl_launch_build(&j->table, o->cluster ? &j->cluster : NULL, &lo,
			       (const char *const *)j->worker, &j->cmd, err);
}

/* Starts the job j built, watches it to its end and says how it failed, if it did; the error
 * code, 0 when it did not. */
static int run_job(const struct sl_run_options *o, struct job *j)
{
	struct sl_err err = {0};
	struct sl_cluster *cluster = j->have_cluster ? &j->cluster : NULL;
	struct watch w = {.last_step = -1, .dead_rank = -1};
	if (o->slurm) {
		slurm_job = j->job_name;
		prctl(PR_SET_CHILD_SUBREAPER, 1); /* srun's helper comes back to us, not init */
	}
	int status = start_and_watch(&j->cmd, &w, &err);
	if (!o->slurm && status > 0 && !launcher_signal && sl_start_watch_retry(&w.start, status)) {
		/* nothing of the job ran: what a user would do by hand, once (start_failure.h) */
		sl_log_warn("mpirun did not start the job: %s (exit status %d); starting it once more",
			    w.start.reason, status);
		memset(&w, 0, sizeof(w));
		w.last_step = -1;
		w.dead_rank = -1;
		status = start_and_watch(&j->cmd, &w, &err);
	}
	if (o->slurm)
		slurm_tear_down(j->job_name);
	if (o->slurm && status > 0 && !launcher_signal && !w.failed_node[0] && w.dead_rank >= 0 &&
	    w.dead_signal == 0)
		find_dead_node(o, &j->cluster, &w);
	if (status || w.failed_node[0])
		return report_failure(o, &j->table, &j->cat, cluster, &w, status, &err);
	return 0;
}

static void job_free(struct job *j)
{
	if (j->cmd.hostfile[0])
		unlink(j->cmd.hostfile);
	if (j->cmd.rankfile[0])
		unlink(j->cmd.rankfile);
	if (j->made_rundir)
		rmdir(j->rundir);
	free(j->worker);
	sl_launch_cmd_free(&j->cmd);
	if (j->have_cluster)
		sl_cluster_free(&j->cluster);
	sl_role_table_free(&j->table);
}

static int launch(const struct sl_run_options *o, int argc, char **argv, int dry_run)
{
	struct sl_err err = {0};
	struct job j;
	memset(&j, 0, sizeof(j));
	snprintf(j.rundir, sizeof(j.rundir), "/tmp/sailor-run-XXXXXX");
	j.have_cluster = o->cluster || o->slurm;
	struct sl_runner_checked checked;
	sl_plan_init(&checked.plan);
	int rc = sl_runner_check_plan(o, &j.table, &j.cat, &checked, &err);
	if (rc) {
		if (rc == SL_EUSAGE)
			return sl_cli_usage_error(&sl_cmd_run, "%s", err.msg);
		sl_cli_error(&sl_cmd_run, "%s", err.msg);
		return 1;
	}
	rc = build_job(o, argc, argv, &j, &err);
	if (rc)
		sl_cli_error(&sl_cmd_run, "%s", err.msg);
	else if (dry_run && (rc = print_dry_run(o, &j.table, &j.cat,
						j.have_cluster ? &j.cluster : NULL, &j.cmd, &checked,
						&err)))
		sl_cli_error(&sl_cmd_run, "%s", err.msg);
	else if (!dry_run && !(rc = check_output_files(o)))
		rc = run_job(o, &j);
	job_free(&j);
	sl_plan_free(&checked.plan);
	return sl_err_exit_status(rc);
}

static int work(const struct sl_run_options *o, int argc, char **argv, int rank)
{
	struct sl_comm comm;
	struct sl_err err = {0};
	/* answer the controller's liveness probe from the start (SIGUSR1 would otherwise kill) */
	snprintf(probe_answer, sizeof(probe_answer), "{\"event\":\"alive\",\"rank\":%d}\n", rank);
	probe_answer_len = strlen(probe_answer);
	install_probe_handler(on_rank_probe);
	sl_runner_catch_stop();
	int rc = sl_comm_mpi_init(&comm, &argc, &argv, &err);
	if (rc) {
		sl_cli_error(&sl_cmd_run, "%s", err.msg);
		return 1;
	}
	/* under Slurm: the allocation must be the plan's (launch_slurm.h) before the first step;
	 * every rank reaches the same verdict, rank 0 says it */
	if (o->slurm || (o->cluster && getenv("SLURM_STEP_ID"))) {
		struct sl_role_table table;
		struct sl_catalogue cat;
		struct sl_cluster cluster;
		memset(&table, 0, sizeof(table));
		memset(&cluster, 0, sizeof(cluster));
		struct sl_slurm_nodes nodes = {0};
		rc = sl_runner_check_plan(o, &table, &cat, NULL, &err);
		if (!rc && o->cluster)
			rc = sl_cluster_load(o->cluster, &cat, &cluster, &err);
		else if (!rc && !(rc = sl_slurm_query(o->partition, &nodes, &err)))
			rc = sl_slurm_to_cluster(&nodes, &cat, &cluster, &err);
		if (!rc)
			rc = sl_launch_slurm_check_placement(&table, &cluster, &cat, &comm, &err);
		sl_slurm_nodes_free(&nodes);
		sl_cluster_free(&cluster);
		sl_role_table_free(&table);
		if (rc) {
			if (comm.rank == 0)
				sl_cli_error(&sl_cmd_run, "%s", err.msg);
			fflush(stderr);
			sl_comm_finalize(&comm);
			return 1;
		}
	}
	rc = sl_runner_run(o, &comm, stdout, &err);
	if (rc) {
		/* errors of the input are the same on every rank: rank 0 says it once */
		int same_everywhere = rc == SL_EUSAGE || rc == SL_EINPUT || rc == SL_ENOTFOUND;
		if (comm.rank == 0 || !same_everywhere)
			sl_cli_error(&sl_cmd_run, "rank %d: %s", comm.rank, err.msg);
		fflush(stdout);
		fflush(stderr);
		/* the other ranks may be waiting on this one: end the whole job */
		sl_comm_abort(&comm, sl_err_exit_status(rc));
	}
	sl_comm_finalize(&comm);
	return 0;
}

static int run_run(int argc, char **argv)
{
	/* as launcher: pass the controller's probe on to mpirun (a worker answers it, work()) */
	install_probe_handler(on_launcher_probe);
	struct sl_run_options o;
	memset(&o, 0, sizeof(o));
	sl_train_options_defaults(&o.train);
	struct sl_cli_parser parser;
	sl_cli_parser_init(&parser, &sl_cmd_run, argc, argv);
	long long seed = (long long)o.train.seed;
	int dry_run = 0;
	struct sl_cli_zones zones = {0};
	for (int idx; (idx = sl_cli_next(&parser)) != SL_CLI_END;) {
		if (idx == SL_CLI_ERROR)
			return 2;
		if (idx == SL_CLI_HELP)
			return 0;
		int rc = 0;
		if (idx < SL_TOPT_COUNT)
			rc = sl_cli_train_option(&sl_cmd_run, idx, parser.arg, &o.train, &seed);
		if (idx == SL_TOPT_MICRO)
			o.micro_batch_given = 1;
		else if (idx == OPT_PLAN)
			o.plan = parser.arg;
		else if (idx == OPT_CLUSTER)
			o.cluster = parser.arg;
		else if (idx == OPT_THREADS_PER_RANK)
			rc = sl_cli_parse_int(&sl_cmd_run, options[idx].name, parser.arg, 1,
					      SL_MAX_THREADS, &o.threads_per_rank);
		else if (idx == OPT_DRY_RUN)
			dry_run = 1;
		else if (idx == OPT_EVENTS_FILE)
			o.events_file = parser.arg;
		else if (idx == OPT_SLURM)
			o.slurm = 1;
		else if (idx == OPT_PARTITION)
			o.partition = parser.arg;
		else if (idx == OPT_TIMELINE)
			o.timeline = parser.arg;
		else if (idx == OPT_ZONES)
			rc = sl_cli_zones_add(&sl_cmd_run, &zones, parser.arg);
		else if (idx == OPT_GPUS) {
			struct sl_err err = {0};
			if (sl_catalogue_set_overlay(parser.arg, &err)) {
				sl_cli_error(&sl_cmd_run, "%s", err.msg);
				return 1;
			}
		}
		if (rc)
			return rc;
	}
	o.train.seed = (unsigned long long)seed;
	if (parser.next_index < argc)
		return sl_cli_usage_error(&sl_cmd_run, "unexpected argument '%s'",
					  argv[parser.next_index]);
	if (!o.plan)
		return sl_cli_usage_error(&sl_cmd_run, "--plan is required (a plan file, e.g. from "
					  "'sailor plan -o plan.json')");
	if (o.partition && !o.slurm)
		return sl_cli_usage_error(&sl_cmd_run, "--partition applies to --slurm only");
	int rc = sl_cli_train_options_check(&sl_cmd_run, &o.train, 0);
	if (rc)
		return rc;
	struct sl_err err = {0};
	if (sl_cli_use_zones(&zones, NULL, o.cluster, &err))
		return sl_cli_error(&sl_cmd_run, "%s", err.msg);
	int size = 0, rank = 0;
	if (sl_launch_in_mpi_job(&size, &rank) && !dry_run)
		return work(&o, argc, argv, rank);
	return launch(&o, argc, argv, dry_run);
}
