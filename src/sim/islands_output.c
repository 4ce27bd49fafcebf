/* What `sailor simulate` says of a plan with islands (sim.h): island by island, the outer step
 * per round, and the round; as text after the breakdown by stage (which is island 0's), and as
 * the "islands" object of --json. */
#include <stdlib.h>

#include "sim/internal.h"

static struct sl_sim_islands *detail_of(const struct sl_sim_env *env, const struct sl_plan *plan,
					const struct sl_sim_result *res)
{
	if (!plan->islands || plan->islands->count < 2)
		return NULL;
	struct sl_sim_islands *d = calloc(1, sizeof(*d));
	struct sl_sim_result *again = malloc(sizeof(*again));
	if (d && again && sl_sim_islands(env, plan, res->cost_model, again, d, NULL)) {
		free(d);
		d = NULL;
	}
	free(again);
	return d;
}

void sl_sim_islands_print(FILE *f, const struct sl_sim_env *env, const struct sl_plan *plan,
			  const struct sl_sim_result *res)
{
	struct sl_sim_islands *d = detail_of(env, plan, res);
	if (!d)
		return;
	const struct sl_plan_islands *isl = plan->islands;
	fprintf(f, "\nislands: %d; a round is island 0's %d inner steps, then the outer step "
		   "(wire %s, %d fragment%s, overlap %d step%s); the stages above are island 0's\n",
		d->count, isl->inner_steps[0], sl_islands_wire_name(isl->wire), isl->fragments,
		isl->fragments > 1 ? "s" : "", isl->overlap_steps, isl->overlap_steps == 1 ? "" : "s");
	fprintf(f, "  %-6s %9s %5s %6s %10s %10s %9s %8s %s\n", "island", "pipelines", "GPUs",
		"inner", "step s", "compute s", "stall s", "peak GB", "");
	for (int i = 0; i < d->count; i++) {
		const struct sl_sim_island *s = &d->island[i];
		fprintf(f, "  %-6d %9d %5lld %6d %10.4f %10.4f %9.4f %8.2f %s\n", i, s->pipelines,
			s->gpus, s->inner_steps, s->step_s, s->compute_s, s->stall_s,
			s->peak_memory_bytes / 1e9, s->fits_memory ? "fits" : "DOES NOT FIT");
	}
	fprintf(f, "outer step per round: %.0f bytes between islands (", d->bytes_per_round);
	const char *sep = "";
	for (int c = 0; c < SL_LINK_CLASSES; c++)
		if (d->class_bytes[c] > 0) {
			fprintf(f, "%s%s %.0f", sep, sl_link_model_class_name(c), d->class_bytes[c]);
			sep = ", ";
		}
	fprintf(f, "), %.0f per 1,000 tokens; the exchange %.4f s blocking (a fragment %.4f s), "
		   "egress $%.6f\n", d->bytes_per_1k_tokens, d->exchange_s, d->fragment_exchange_s,
		d->outer_egress_usd_per_round);
	fprintf(f, "round               %.4f s for %.0f tokens (%.0f tokens/s); a rank holds %.3f GB "
		   "more (global weights, outer momentum, fragments in flight)\n",
		d->round_s, d->tokens_per_round, d->tokens_per_round / d->round_s,
		d->outer_memory_bytes / 1e9);
	free(d);
}

json_t *sl_sim_islands_json(const struct sl_sim_env *env, const struct sl_plan *plan,
			    const struct sl_sim_result *res)
{
	struct sl_sim_islands *d = detail_of(env, plan, res);
	if (!d)
		return NULL;
	json_t *islands = json_array();
	for (int i = 0; i < d->count; i++) {
		const struct sl_sim_island *s = &d->island[i];
		json_array_append_new(islands, json_pack(
			"{s:i, s:i, s:I, s:I, s:f, s:f, s:f, s:f, s:b, s:f}", "island", i,
			"pipelines", s->pipelines, "gpus", (json_int_t)s->gpus, "inner_steps",
			(json_int_t)s->inner_steps, "step_s", s->step_s, "compute_s", s->compute_s,
			"stall_s", s->stall_s, "peak_memory_bytes", s->peak_memory_bytes,
			"fits_memory", s->fits_memory, "gpu_usd_per_hour", s->gpu_usd_per_hour));
	}
	json_t *classes = json_object();
	for (int c = 0; c < SL_LINK_CLASSES; c++)
		if (d->class_bytes[c] > 0)
			json_object_set_new(classes, sl_link_model_class_name(c),
					    json_real(d->class_bytes[c]));
	json_t *o = json_pack("{s:o, s:f, s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "islands",
			      islands, "bytes_per_round", d->bytes_per_round, "bytes_by_link_class",
			      classes, "bytes_per_1k_tokens", d->bytes_per_1k_tokens, "exchange_s",
			      d->exchange_s, "fragment_exchange_s", d->fragment_exchange_s, "round_s",
			      d->round_s, "tokens_per_round", d->tokens_per_round,
			      "outer_egress_usd_per_round", d->outer_egress_usd_per_round,
			      "outer_memory_bytes", d->outer_memory_bytes);
	free(d);
	return o;
}
