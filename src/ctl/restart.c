/* Reconciling a run directory's records when a controller starts on it (restart.h). */
#include "ctl/restart.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/atomic_file.h"

/* Step events by step number (index 0 unused); a later put of a step replaces the earlier. */
struct by_step {
	json_t **ev;
	long long cap;
	int *gen;           /* the generation a recovered line came from */
};

static int put(struct by_step *b, long long step, json_t *e, int gen)
{
	if (step >= b->cap) {
		long long cap = b->cap ? b->cap : 1024;
		while (cap <= step)
			cap *= 2;
		json_t **ev = realloc(b->ev, (size_t)cap * sizeof(*ev));
		if (!ev)
			return SL_ENOMEM;
		b->ev = ev;
		int *g = realloc(b->gen, (size_t)cap * sizeof(*g));
		if (!g)
			return SL_ENOMEM;
		b->gen = g;
		memset(b->ev + b->cap, 0, (size_t)(cap - b->cap) * sizeof(*ev));
		memset(b->gen + b->cap, 0, (size_t)(cap - b->cap) * sizeof(*g));
		b->cap = cap;
	}
	json_decref(b->ev[step]);
	b->ev[step] = e;
	b->gen[step] = gen;
	return 0;
}

static void by_step_free(struct by_step *b)
{
	for (long long s = 0; s < b->cap; s++)
		json_decref(b->ev[s]);
	free(b->ev);
	free(b->gen);
}

/* Reads the step events of path into b (gen: the generation to note, 0 for RUNDIR's own file).
 * A missing file is empty; a line that is not a whole step event (cut by a kill) is skipped. */
static int read_steps(const char *path, struct by_step *b, int gen, long long *newest,
		      struct sl_err *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : sl_err_set(err, SL_EIO, "cannot read '%s': %s", path,
						       strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;
	while (!rc && getline(&line, &cap, f) >= 0) {
		json_t *e = json_loads(line, 0, NULL);
		const char *type = json_string_value(json_object_get(e, "event"));
		json_t *s = json_object_get(e, "step");
		long long step = json_is_integer(s) ? json_integer_value(s) : 0;
		if (!type || strcmp(type, "step") || step < 1 ||
		    !json_is_number(json_object_get(e, "loss"))) {
			json_decref(e);
			continue;
		}
		if (step > *newest)
			*newest = step;
		if (put(b, step, e, gen)) {
			json_decref(e);
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
		}
	}
	if (!rc && ferror(f))
		rc = sl_err_set(err, SL_EIO, "cannot read '%s': %s", path, strerror(errno));
	free(line);
	fclose(f);
	return rc;
}

/* The largest n of a folder run_dir/gen-<n>. */
static int newest_generation(const char *run_dir)
{
	DIR *d = opendir(run_dir);
	int newest = 0;
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));) {
		int n, len = 0;
		if (sscanf(e->d_name, "gen-%d%n", &n, &len) == 1 && !e->d_name[len] && n > newest)
			newest = n;
	}
	closedir(d);
	return newest;
}

int sl_ctl_restart_reconcile(const char *run_dir, long long resume_step,
			     struct sl_ctl_restart_info *info, struct sl_err *err)
{
	memset(info, 0, sizeof(*info));
	info->generations = newest_generation(run_dir);
	char path[SL_ATOMIC_PATH_MAX];
	snprintf(path, sizeof(path), "%s/steps.jsonl", run_dir);
	struct by_step own = {0}, gens = {0};
	int rc = read_steps(path, &own, 0, &info->newest_step, err);
	/* of several generations that ran a step (one failed after it), the newest one's line */
	for (int n = 1; !rc && n <= info->generations; n++) {
		char gen_path[SL_ATOMIC_PATH_MAX + 32];
		snprintf(gen_path, sizeof(gen_path), "%s/gen-%d/steps.jsonl", run_dir, n);
		rc = read_steps(gen_path, &gens, n, &info->newest_step, err);
	}
	if (rc || (!own.cap && !gens.cap)) {
		by_step_free(&own);
		by_step_free(&gens);
		return rc;
	}
	struct sl_atomic_file af;
	if ((rc = sl_atomic_open(&af, path, "steps file", err))) {
		by_step_free(&own);
		by_step_free(&gens);
		return rc;
	}
	long long top = own.cap > gens.cap ? own.cap : gens.cap;
	for (long long s = 1; s < top; s++) {
		json_t *e = s < own.cap ? own.ev[s] : NULL;
		int recovered = 0;
		if (!e && s < gens.cap && gens.ev[s]) {
			e = gens.ev[s];
			recovered = 1;
		}
		if (!e)
			continue;
		if (s > resume_step) {
			info->steps_to_rerun++;
			continue;
		}
		if (recovered) {
			json_object_set_new(e, "generation", json_integer(gens.gen[s]));
			json_object_set_new(e, "recovered", json_true());
			json_object_set_new(e, "recovered_by", json_string("controller_restart"));
			info->steps_recovered++;
		}
		info->steps_on_record++;
		char *text = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER |
					   JSON_REAL_PRECISION(17));
		if (!text) {
			sl_atomic_abort(&af);
			by_step_free(&own);
			by_step_free(&gens);
			return sl_err_set(err, SL_ENOMEM, "out of memory");
		}
		fprintf(af.f, "%s\n", text);
		free(text);
	}
	by_step_free(&own);
	by_step_free(&gens);
	return sl_atomic_commit(&af, err);
}
