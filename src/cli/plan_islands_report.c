/* `sailor plan`'s words on a plan's sync: see plan_islands_report.h. */
#include "cli/plan_islands_report.h"

#include <stdlib.h>
#include <string.h>

#include "plan/microbatch_share.h"
#include "plan/outer_bytes.h"
#include "search/islands_search.h"

#define MAX_LINKS 64

/* The outer step's bytes per round over each link between two zones. */
struct zone_links {
	int count;
	int from[MAX_LINKS], to[MAX_LINKS];
	double bytes[MAX_LINKS];
};

static void add_link(struct zone_links *z, int from, int to, double bytes)
{
	if (from == to)
		return;
	int i = 0;
	while (i < z->count && !(z->from[i] == from && z->to[i] == to))
		i++;
	if (i == MAX_LINKS)
		return;
	if (i == z->count) {
		z->from[i] = from;
		z->to[i] = to;
		z->bytes[i] = 0;
		z->count++;
	}
	z->bytes[i] += bytes;
}

static void on_transfer(void *ctx, const struct sl_outer_transfer *t)
{
	add_link(ctx, t->src_zone, t->dst_zone, (double)t->bytes);
}

static void on_zone_bytes(void *ctx, int from_zone, int to_zone, double bytes, int both_ways)
{
	add_link(ctx, from_zone, to_zone, bytes);
	if (both_ways)
		add_link(ctx, to_zone, from_zone, bytes);
}

/* What the sync print and JSON need: the simulator's own figures, the bytes between zones
 * (per round of an island plan, per iteration of a synchronous one) and the tokens they carry,
 * the token value. */
struct sync_facts {
	struct sl_sim_result raw;
	struct sl_outer_bytes bytes;
	struct zone_links links;
	double tokens;
	double value;
	int extrapolated;
};

static int facts_of(const struct sl_sim_env *env, const struct sl_plan *plan,
		    const struct sl_sim_result *ranked, const struct sl_token_value *tv,
		    struct sync_facts *f)
{
	struct sl_err err = {0};
	memset(f, 0, sizeof(*f));
	long long G = plan->global_batch > 0 ? plan->global_batch : env->model.default_global_batch;
	if (sl_simulate(env, plan, ranked->cost_model, &f->raw, &err))
		return -1;
	f->value = sl_search_plan_token_value(tv, plan, &f->extrapolated);
	if (plan->islands && plan->islands->count > 1) {
		if (sl_outer_bytes_visit(plan, &env->model, G, env->model.seq_len, &env->catalogue,
					 on_transfer, &f->links, &f->bytes, &err) ||
		    sl_sim_islands_zone_bytes(env, plan, on_zone_bytes, &f->links, &err))
			return -1;
		f->tokens = f->bytes.tokens_per_round;
		return 0;
	}
	int *counts = malloc(sizeof(int) * (size_t)plan->num_pipelines);
	int rc = !counts || sl_plan_microbatch_counts(plan, G, counts, &err) ? -1 : 0;
	if (!rc)
		sl_sim_zone_bytes(env, plan, counts, on_zone_bytes, &f->links);
	free(counts);
	f->tokens = (double)G * env->model.seq_len;
	return rc;
}

static void print_links(FILE *out, const struct sl_sim_env *env, const struct sync_facts *f)
{
	if (!f->links.count) {
		fprintf(out, "; nothing crosses zones\n");
		return;
	}
	fprintf(out, "; between zones, bytes per 1,000 tokens:\n");
	for (int i = 0; i < f->links.count; i++)
		fprintf(out, "    %s -> %s: %.1f\n", env->catalogue.zones[f->links.from[i]].name,
			env->catalogue.zones[f->links.to[i]].name,
			f->links.bytes[i] * 1000.0 / f->tokens);
}

static void print_h(FILE *out, const struct sl_plan_islands *isl)
{
	for (int i = 0; i < isl->count; i++)
		fprintf(out, "%s%d", i ? ", " : "[", isl->inner_steps[i]);
	fprintf(out, "]");
}

void sl_cli_plan_sync_print(FILE *out, const struct sl_sim_env *env, const struct sl_plan *plan,
			    const struct sl_sim_result *ranked, const struct sl_token_value *tv)
{
	const struct sl_plan_islands *isl = plan->islands;
	struct sync_facts f;
	if (facts_of(env, plan, ranked, tv, &f)) {
		fprintf(out, "  sync: %s\n", isl && isl->count > 1 ? "islands" : "every step");
		return;
	}
	if (!isl || isl->count < 2) {
		fprintf(out, "  sync: every step%s", plan->num_pipelines > 1 ? ", all pipelines" : "");
		print_links(out, env, &f);
		return;
	}
	fprintf(out, "  sync: %d islands, inner steps ", isl->count);
	print_h(out, isl);
	fprintf(out, ", wire %s, %d fragment%s, overlap %d\n", sl_islands_wire_name(isl->wire),
		isl->fragments, isl->fragments == 1 ? "" : "s", isl->overlap_steps);
	fprintf(out, "  trained %.0f tokens/s x token value %.3f%s = %.0f effective tokens/s "
		"(it/s and $/iteration above are effective)\n", f.raw.tokens_per_s, f.value,
		f.extrapolated ? " (outside the measurements: the nearest)" : "", ranked->tokens_per_s);
	fprintf(out, "  outer step: %.1f MB a round, %.1f bytes per 1,000 tokens",
		f.bytes.total_bytes / 1e6, f.bytes.bytes_per_1k_tokens);
	print_links(out, env, &f);
}

static json_t *links_json(const struct sl_sim_env *env, const struct sync_facts *f)
{
	json_t *links = json_array();
	for (int i = 0; i < f->links.count; i++) {
		json_t *l = json_object();
		json_object_set_new(l, "from_zone",
				    json_string(env->catalogue.zones[f->links.from[i]].name));
		json_object_set_new(l, "to_zone", json_string(env->catalogue.zones[f->links.to[i]].name));
		json_object_set_new(l, "bytes_per_1k_tokens",
				    json_real(f->links.bytes[i] * 1000.0 / f->tokens));
		json_array_append_new(links, l);
	}
	return links;
}

json_t *sl_cli_plan_sync_json(const struct sl_sim_env *env, const struct sl_plan *plan,
			      const struct sl_sim_result *ranked, const struct sl_token_value *tv)
{
	json_t *s = json_object();
	const struct sl_plan_islands *isl = plan->islands;
	struct sync_facts f;
	int have = !facts_of(env, plan, ranked, tv, &f);
	if (!isl || isl->count < 2 || !have) {
		json_object_set_new(s, "mode", json_string("every-step"));
		if (have)
			json_object_set_new(s, "inter_zone_links", links_json(env, &f));
		return s;
	}
	json_object_set_new(s, "mode", json_string("islands"));
	json_object_set_new(s, "islands", json_integer(isl->count));
	json_object_set_new(s, "token_value", json_real(f.value));
	json_object_set_new(s, "token_value_extrapolated", json_boolean(f.extrapolated));
	json_object_set_new(s, "token_value_source", json_string(tv ? tv->source : ""));
	json_object_set_new(s, "trained_tokens_per_s", json_real(f.raw.tokens_per_s));
	json_object_set_new(s, "effective_tokens_per_s", json_real(ranked->tokens_per_s));
	json_object_set_new(s, "effective_it_per_s", json_real(ranked->throughput_it_s));
	json_object_set_new(s, "effective_cost_usd_per_iter", json_real(ranked->cost_usd_per_iter));
	json_object_set_new(s, "outer_bytes_per_round", json_real((double)f.bytes.total_bytes));
	json_object_set_new(s, "outer_bytes_per_1k_tokens", json_real(f.bytes.bytes_per_1k_tokens));
	json_object_set_new(s, "inter_zone_links", links_json(env, &f));
	return s;
}

json_t *sl_cli_plan_estimate_json(const struct sl_sim_env *env, const struct sl_plan *plan,
				  const struct sl_sim_result *ranked)
{
	struct sl_sim_result raw;
	struct sl_err err = {0};
	if (plan->islands && !sl_simulate(env, plan, ranked->cost_model, &raw, &err))
		return sl_sim_estimate_json(env, plan, &raw);
	return sl_sim_estimate_json(env, plan, ranked);
}
