/* The controller's Slurm hooks (--slurm): a generation is one Slurm job on the partition's
 * usable nodes (launch_slurm.h), and the partition is the pool source (pool_watch_slurm.c).
 * Invariants: once a generation ended, or the controller leaves, nothing of its job stays
 * queued or running; without --slurm nothing here acts. */
#include "ctl/ctl_state.h"
#include "cluster/slurm.h"
#include "runtime/launch_slurm.h"
#include "util/log.h"

void sl_ctl_slurm_end_job(const struct ctl *c, int say_generation)
{
	if (!c->o->slurm)
		return;
	char job[64];
	struct sl_err e = {0};
	sl_launch_slurm_job_name((int)c->gen.pid, job, sizeof(job));
	if (sl_launch_slurm_end(job, 30, &e)) {
		if (say_generation)
			sl_log_warn("generation %d: %s", c->gen.index, e.msg);
		else
			sl_log_warn("%s", e.msg);
	}
}

/* scancel of the running generation's job: signal NULL cancels it, else signals its tasks */
static void scancel_generation(const struct ctl *c, const char *signal)
{
	if (!c->o->slurm || !c->running)
		return;
	char job[64];
	struct sl_err e = {0};
	sl_launch_slurm_job_name((int)c->gen.pid, job, sizeof(job));
	if (sl_slurm_cancel_name(job, signal, &e))
		sl_log_warn("generation %d: %s", c->gen.index, e.msg);
}

void sl_ctl_slurm_kill_tasks(struct ctl *c) { scancel_generation(c, "USR2"); }

void sl_ctl_slurm_cancel_job(struct ctl *c) { scancel_generation(c, NULL); }

int sl_ctl_slurm_no_first_plan(const struct ctl *c, struct sl_err *err)
{
	/* the planner's own error names the cause and the fix (a missing profile: `sailor
	 * profile`, --profiles); more nodes would not help it, so it is not told to add them */
	if (c->search_err.code)
		return sl_err_set(err, c->search_err.code, "slurm: no plan is possible on the nodes "
				  "Slurm offers now (%lld GPUs): %s", sl_pool_total(&c->pool.current),
				  c->search_err.msg);
	return sl_err_set(err, SL_EINFEASIBLE, "slurm: no plan is possible on the nodes Slurm "
			  "offers now (%lld GPUs; the reason is above); add or resume nodes, or "
			  "ask for less (--global-batch, --max-cost, --min-throughput)",
			  sl_pool_total(&c->pool.current));
}
