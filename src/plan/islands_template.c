/* Islands made from a plan by a rule (islands.h, docs/formats.md#islands-template): the
 * pipelines grouped by the region (or zone) their first stage runs in, with the outer step's
 * settings from a template file. What `sailor plan --islands` and `sailor control --islands` apply
 * to the synchronous plans the planner finds, until the planner chooses islands itself. */
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "util/json.h"

int sl_islands_template_load(const char *path, json_t **out, struct sl_err *err)
{
	*out = NULL;
	json_t *root = sl_json_load_file(path, "islands template", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int rc;
	static const char *const fields[] = {"by",       "inner_steps",   "outer_lr",
					     "outer_momentum", "wire", "fragments",
					     "overlap_steps",  "merge"};
	rc = json_is_object(root) ? sl_json_check_fields(root, "", fields,
							  sizeof(fields) / sizeof(*fields), err)
				  : sl_err_set(err, SL_EINPUT, "top level: expected an object");
	const char *by = NULL;
	if (!rc && (rc = sl_json_get_string(root, "", "by", &by, err)) == 0 && strcmp(by, "region") &&
	    strcmp(by, "zone"))
		rc = sl_err_set(err, SL_EINPUT, "by: '%s': choose \"region\" or \"zone\" (the pipelines "
				"whose first stage runs there form one island)", by);
	if (!rc && json_is_array(json_object_get(root, "inner_steps")))
		rc = sl_err_set(err, SL_EINPUT, "inner_steps: one number in a template (the islands "
				"are not known until the plan is)");
	/* the settings are checked now, on a one-island section, so that a bad template fails
	 * before any plan is searched */
	if (!rc) {
		json_t *probe = json_deep_copy(root);
		json_object_del(probe, "by");
		json_object_set_new(probe, "pipelines", json_pack("[[i]]", 0));
		struct sl_plan_islands *isl = NULL;
		rc = sl_islands_from_json(probe, 1, &isl, err);
		free(isl);
		json_decref(probe);
	}
	if (rc) {
		json_decref(root);
		return sl_err_prefix(err, "islands template '%s'", path);
	}
	*out = root;
	return 0;
}

/* The region or zone of pipeline j's first stage. */
static int group_key(const json_t *tmpl, const struct sl_plan *plan,
		     const struct sl_catalogue *cat, int j)
{
	int zone = sl_plan_replica(plan, 0, j)->zone;
	const char *by = json_string_value(json_object_get(tmpl, "by"));
	return by && !strcmp(by, "zone") ? zone : cat->zones[zone].region;
}

int sl_islands_template_apply(const json_t *tmpl, struct sl_plan *plan,
			      const struct sl_catalogue *cat, struct sl_err *err)
{
	int D = plan->num_pipelines;
	free(plan->islands);
	plan->islands = NULL;
	json_t *groups = json_array();
	int *seen = malloc((size_t)D * sizeof(int));
	if (!groups || !seen) {
		free(seen);
		json_decref(groups);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	/* islands in the order of their first pipeline, so that pipeline 0's is first */
	int n = 0;
	for (int j = 0; j < D; j++) {
		int key = group_key(tmpl, plan, cat, j), i = 0;
		while (i < n && seen[i] != key)
			i++;
		if (i == n) {
			seen[n++] = key;
			json_array_append_new(groups, json_array());
		}
		json_array_append_new(json_array_get(groups, (size_t)i), json_integer(j));
	}
	free(seen);
	int rc = 0;
	if (n > 1) { /* one island is the synchronous plan: nothing to add */
		json_t *section = json_deep_copy(tmpl);
		json_object_del(section, "by");
		json_object_set(section, "pipelines", groups);
		rc = sl_islands_from_json(section, D, &plan->islands, err);
		json_decref(section);
	}
	json_decref(groups);
	return rc;
}
