/* `sailor run --dry-run`'s islands block (islands_summary.h). Byte counts are printed whole, so
 * that a script can compare them with the run's "bytes_between_islands"
 * (tests/integration/run_islands_dry_run.sh), with MiB beside them for a reader. */
#include "cli/islands_summary.h"

#include "cluster/link_model.h"
#include "plan/outer_bytes.h"

/* Island i: its pipelines, the zones its replicas are in (catalogue order), its steps. */
static void print_island(FILE *out, const struct sl_plan *plan, int i, long long global_batch,
			 const struct sl_catalogue *cat)
{
	const struct sl_plan_islands *isl = plan->islands;
	long long mb = 0;
	int count = 0;
	for (int j = 0; j < plan->num_pipelines; j++)
		count += isl->island_of[j] == i;
	fprintf(out, "  island %d: pipeline%s", i, count == 1 ? "" : "s");
	for (int j = 0; j < plan->num_pipelines; j++)
		if (isl->island_of[j] == i) {
			fprintf(out, " %d", j);
			mb += sl_plan_pipeline_microbatches(plan, j, global_batch);
		}
	fprintf(out, " in");
	for (int z = 0, first = 1; z < cat->zone_count; z++) {
		int used = 0;
		for (int j = 0; j < plan->num_pipelines && !used; j++)
			for (int k = 0; k < plan->num_stages && !used; k++)
				used = isl->island_of[j] == i && sl_plan_replica(plan, k, j)->zone == z;
		if (used) {
			fprintf(out, "%s %s", first ? "" : ",", cat->zones[z].name);
			first = 0;
		}
	}
	fprintf(out, "; %d inner steps a round, %lld micro-batch%s a step\n", isl->inner_steps[i],
		mb, mb == 1 ? "" : "es");
}

static void print_bytes(FILE *out, const char *what, long long bytes)
{
	fprintf(out, "    %-34s %15lld  (%.2f MiB)\n", what, bytes, (double)bytes / (1 << 20));
}

int sl_cli_islands_summary(FILE *out, const struct sl_plan *plan,
			   const struct sl_model_config *model, long long global_batch,
			   int seq_len, const struct sl_catalogue *cat, struct sl_err *err)
{
	const struct sl_plan_islands *isl = plan->islands;
	if (!isl)
		return 0;
	if (isl->count == 1) {
		fprintf(out, "islands: 1, which is the synchronous plan (no outer step)\n");
		return 0;
	}
	struct sl_outer_bytes b;
	int rc = sl_outer_bytes_count(plan, model, global_batch, seq_len, cat, &b, err);
	if (rc)
		return rc;
	fprintf(out, "islands: %d (a round is island 0's %d inner steps; then the islands average "
		"their pseudo-gradients)\n", isl->count, isl->inner_steps[0]);
	for (int i = 0; i < isl->count; i++)
		print_island(out, plan, i, global_batch, cat);
	fprintf(out, "  outer SGD lr %g, Nesterov momentum %g; wire %s; %d fragment%s; overlap %d "
		"step%s", isl->outer_lr, isl->outer_momentum, sl_islands_wire_name(isl->wire),
		isl->fragments, isl->fragments == 1 ? "" : "s", isl->overlap_steps,
		isl->overlap_steps == 1 ? "" : "s");
	if (isl->overlap_steps)
		fprintf(out, " (merge %g)", isl->merge);
	fprintf(out, "\n  bytes between islands per round (every fragment exchanged once; %lld "
		"outer group%s of %d ranks):\n", b.groups, b.groups == 1 ? "" : "s", isl->count);
	for (int c = 0; c < SL_LINK_CLASSES; c++)
		if (b.class_bytes[c])
			print_bytes(out, sl_link_model_class_name(c), b.class_bytes[c]);
	print_bytes(out, "total", b.total_bytes);
	fprintf(out, "    %-34s %15.0f  (%.0f tokens a round)\n", "per 1,000 tokens trained",
		b.bytes_per_1k_tokens, b.tokens_per_round);
	return 0;
}
