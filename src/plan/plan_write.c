/* A plan written in our format, sailor.plan/1 (plan.h, docs/formats.md#plan): stages with their
 * layer ranges and memory options, each stage's replicas run-length encoded (consecutive replicas
 * of one GPU type, zone and TP degree as one entry with a count), and the micro-batch counts per
 * pipeline when they are uneven. What sl_plan_load reads back is the same plan. */
#include "plan/plan.h"

#include "util/atomic_file.h"
#include "util/json.h"

json_t *sl_plan_to_json(const struct sl_plan *plan, const struct sl_catalogue *cat)
{
	json_t *root = json_object();
	json_object_set_new(root, "schema", json_string("sailor.plan/1"));
	if (plan->model[0])
		json_object_set_new(root, "model", json_string(plan->model));
	if (plan->global_batch > 0)
		json_object_set_new(root, "global_batch", json_integer(plan->global_batch));
	json_object_set_new(root, "micro_batch", json_integer(plan->micro_batch));
	json_t *stages = json_array();
	for (int k = 0; k < plan->num_stages; k++) {
		json_t *st = json_object();
		json_t *layers = json_array();
		json_array_append_new(layers, json_integer(plan->stages[k].first_layer));
		json_array_append_new(layers, json_integer(plan->stages[k].last_layer));
		json_object_set_new(st, "layers", layers);
		if (plan->stages[k].recompute != SL_RECOMPUTE_NONE)
			json_object_set_new(st, "recompute",
					    json_string(sl_recompute_name(plan->stages[k].recompute)));
		if (plan->stages[k].zero)
			json_object_set_new(st, "zero", json_integer(plan->stages[k].zero));
		json_t *reps = json_array();
		for (int j = 0; j < plan->num_pipelines;) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			int n = 1;
			while (j + n < plan->num_pipelines) {
				const struct sl_replica *q = sl_plan_replica(plan, k, j + n);
				if (q->gpu != r->gpu || q->zone != r->zone || q->tp != r->tp)
					break;
				n++;
			}
			json_t *e = json_object();
			json_object_set_new(e, "gpu", json_string(cat->gpus[r->gpu].name));
			json_object_set_new(e, "zone", json_string(cat->zones[r->zone].name));
			json_object_set_new(e, "tp", json_integer(r->tp));
			json_object_set_new(e, "count", json_integer(n));
			json_array_append_new(reps, e);
			j += n;
		}
		json_object_set_new(st, "replicas", reps);
		json_array_append_new(stages, st);
	}
	json_object_set_new(root, "stages", stages);
	if (plan->uneven_microbatches) {
		json_t *m = json_array();
		for (int j = 0; j < plan->num_pipelines; j++)
			json_array_append_new(m, json_integer(plan->microbatches[j]));
		json_object_set_new(root, "microbatches_per_pipeline", m);
	}
	if (plan->islands)
		json_object_set_new(root, "islands", sl_islands_to_json(plan->islands));
	return root;
}

int sl_plan_save(const struct sl_plan *plan, const struct sl_catalogue *cat, const char *path,
		 struct sl_err *err)
{
	struct sl_atomic_file af;
	int rc = sl_atomic_open(&af, path, "plan", err);
	if (rc)
		return rc;
	json_t *root = sl_plan_to_json(plan, cat);
	if (sl_json_print(af.f, root) != 0) {
		sl_atomic_abort(&af);
		rc = sl_err_set(err, SL_EIO, "cannot write plan '%s'", path);
	} else {
		rc = sl_atomic_commit(&af, err);
	}
	json_decref(root);
	return rc;
}
