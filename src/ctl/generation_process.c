/* Generations of the controller (generation_process.h). */
#include "ctl/generation_process.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

int sl_ctl_gen_start(struct sl_ctl_gen *g, int index, char *const argv[], char *const env[],
		     const char *dir, struct sl_err *err)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
	char path[4200];
	const char *names[2] = {"stdout.jsonl", "stderr.log"};
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		g->log[i] = fopen(path, "w");
		if (!g->log[i]) {
			sl_ctl_gen_close(g);
			return sl_err_set(err, SL_EIO, "cannot write '%s': %s", path, strerror(errno));
		}
	}
	/* the controller's own handlers and its ignored SIGPIPE are not the launcher's */
	static const int child_defaults[] = {SIGINT, SIGTERM, SIGPIPE, 0};
	g->child = (struct sl_run_command){
		.argv = argv, .env = env,
		.out = SL_RUN_COMMAND_PIPE, .err = SL_RUN_COMMAND_PIPE,
		.new_process_group = 1,
		/* the launcher stops its ranks (with a checkpoint) when the controller dies */
		.parent_death_signal = SIGTERM,
		.default_signals = child_defaults, .who = "sailor control",
	};
	int rc = sl_run_command_start(&g->child, err);
	if (rc) {
		sl_ctl_gen_close(g);
		return rc;
	}
	g->pid = g->child.pid;
	g->started_s = sl_now_s();
	return 0;
}

/* Where pump's output goes: the generation's logs and lines, then fn. */
struct pump_ctx {
	struct sl_ctl_gen *g;
	sl_ctl_line_fn *fn;
	void *ctx;
};

static void take(struct sl_ctl_gen *g, int i, const char *buf, size_t n, sl_ctl_line_fn *fn,
		 void *ctx)
{
	fwrite(buf, 1, n, g->log[i]);
	fflush(g->log[i]);
	for (size_t k = 0; k < n; k++) {
		char c = buf[k];
		if (c == '\n' || g->used[i] + 1 >= sizeof(g->line[i])) {
			g->line[i][g->used[i]] = 0;
			if (fn)
				fn(ctx, i, g->line[i]);
			g->used[i] = 0;
		} else {
			g->line[i][g->used[i]++] = c;
		}
	}
}

/* An sl_run_command_output_fn. */
static void take_bytes(void *ctx, int is_stderr, const char *buf, size_t n)
{
	struct pump_ctx *p = ctx;
	take(p->g, is_stderr, buf, n, p->fn, p->ctx);
}

int sl_ctl_gen_pump(struct sl_ctl_gen *g, int timeout_ms, sl_ctl_line_fn *fn, void *ctx)
{
	if (g->reaped)
		return 1;
	struct pump_ctx p = {g, fn, ctx};
	if (sl_run_command_read(&g->child, timeout_ms, take_bytes, &p) != 0)
		return 0; /* a pipe is still open */
	int r = sl_run_command_reap(&g->child, 0);
	if (r == 0) {
		usleep(20000); /* the pipes closed just before the exit: look again soon */
		return 0;
	}
	if (r < 0 && errno == EINTR)
		return 0;
	/* a last line without a newline still counts */
	for (int i = 0; i < 2; i++)
		if (g->used[i]) {
			take(g, i, "\n", 1, fn, ctx);
		}
	g->reaped = 1;
	g->status = r < 0 ? 127 : g->child.status;
	/* whatever the launcher left in its group (it should be nothing) goes with it */
	kill(-g->pid, SIGKILL);
	return 1;
}

#define MAX_PROCS 4096

/* The parent of pid from /proc/<pid>/stat, or -1. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	int ppid;
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

/* Every process below root (ranks are started by mpirun in process groups of their own, so a
 * signal to the launcher's group does not reach them). */
static int descendants(pid_t root, pid_t *out, int cap)
{
	pid_t pids[MAX_PROCS], ppids[MAX_PROCS];
	int n = 0, count = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d)) && n < MAX_PROCS;) {
		int pid = atoi(e->d_name);
		if (pid <= 0)
			continue;
		pids[n] = pid;
		ppids[n++] = parent_of(pid);
	}
	closedir(d);
	out[count++] = root;
	for (int i = 0; i < count && count < cap; i++)
		for (int k = 0; k < n && count < cap; k++)
			if (ppids[k] == out[i])
				out[count++] = pids[k];
	for (int i = 1; i < count; i++)
		out[i - 1] = out[i];
	return count - 1;
}

static int is_rank(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char buf[4096];
	int found = 0;
	size_t n;
	/* variables are NUL-separated; a name split across reads is missed only if the file is
	 * larger than the buffer, and then the launcher is signalled instead */
	while (!found && (n = fread(buf, 1, sizeof(buf) - 1, f)) > 0) {
		buf[n] = 0;
		for (size_t i = 0; i < n && !found; i += strlen(buf + i) + 1)
			found = !strncmp(buf + i, "OMPI_COMM_WORLD_RANK=", 21);
	}
	fclose(f);
	return found;
}

void sl_ctl_gen_terminate(struct sl_ctl_gen *g)
{
	if (g->reaped || g->term_sent_s > 0)
		return;
	/* SIGTERM straight to the ranks: each finishes its step, they agree to stop after the same
	 * one and rank 0 checkpoints (runner.h). Through the launcher the same takes ~2 s longer
	 * (mpirun forwards it late). Ranks not started yet: the launcher forwards it. */
	pid_t below[MAX_PROCS];
	int n = descendants(g->pid, below, MAX_PROCS), ranks = 0;
	for (int i = 0; i < n; i++)
		if (is_rank(below[i]) && !kill(below[i], SIGTERM))
			ranks++;
	if (!ranks)
		kill(g->pid, SIGTERM);
	g->term_sent_s = sl_now_s();
}

void sl_ctl_gen_probe(struct sl_ctl_gen *g)
{
	/* the launcher forwards it to mpirun, which forwards it to every rank on every host; each
	 * rank's handler answers on its stdout (runner.h) */
	if (!g->reaped)
		kill(g->pid, SIGUSR1);
}

void sl_ctl_gen_kill(struct sl_ctl_gen *g)
{
	if (g->reaped)
		return;
	pid_t below[MAX_PROCS];
	int n = descendants(g->pid, below, MAX_PROCS);
	kill(-g->pid, SIGKILL);
	for (int i = 0; i < n; i++)
		kill(below[i], SIGKILL);
	g->killed = 1;
}

int sl_ctl_reap_orphans(void)
{
	pid_t below[MAX_PROCS];
	int n = descendants(getpid(), below, MAX_PROCS), killed = 0;
	for (int i = 0; i < n; i++)
		if (!kill(below[i], SIGKILL))
			killed++;
	for (int i = 0; i < n; i++)
		waitpid(below[i], NULL, WNOHANG);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return killed;
}

void sl_ctl_gen_close(struct sl_ctl_gen *g)
{
	sl_run_command_close(&g->child);
	for (int i = 0; i < 2; i++) {
		if (g->log[i])
			fclose(g->log[i]);
		g->log[i] = NULL;
	}
}
