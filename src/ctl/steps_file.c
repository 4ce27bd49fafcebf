/* A generation's own record of its steps (steps_file.h). */
#include "ctl/steps_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sl_ctl_seen_steps_add(struct sl_ctl_seen_steps *s, long long step)
{
	if (s->count == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		long long *grown = realloc(s->steps, cap * sizeof(*grown));
		if (!grown)
			return SL_ENOMEM;
		s->steps = grown;
		s->cap = cap;
	}
	s->steps[s->count++] = step;
	return 0;
}

void sl_ctl_seen_steps_clear(struct sl_ctl_seen_steps *s)
{
	s->count = 0;
}

long long sl_ctl_seen_steps_newest(const struct sl_ctl_seen_steps *s)
{
	long long newest = -1;
	for (size_t i = 0; i < s->count; i++)
		if (s->steps[i] > newest)
			newest = s->steps[i];
	return newest;
}

void sl_ctl_seen_steps_free(struct sl_ctl_seen_steps *s)
{
	free(s->steps);
	memset(s, 0, sizeof(*s));
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

struct entry {
	long long step;
	size_t line;     /* the tie-break: of two lines of one step, the later one wins */
	json_t *event;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* The step event a line holds, or NULL: a line cut short by a kill does not parse, and a line
 * that parses must still be a whole step event to count. */
static json_t *parse_step(const char *line, long long *step)
{
	json_t *e = json_loads(line, 0, NULL);
	const char *type = json_string_value(json_object_get(e, "event"));
	json_t *s = json_object_get(e, "step");
	if (!type || strcmp(type, "step") || !json_is_integer(s) ||
	    !json_is_number(json_object_get(e, "loss"))) {
		json_decref(e);
		return NULL;
	}
	*step = json_integer_value(s);
	return e;
}

int sl_ctl_steps_file_missing(const char *path, const struct sl_ctl_seen_steps *seen,
			      json_t **missing, int *skipped_lines, struct sl_err *err)
{
	*missing = NULL;
	if (skipped_lines)
		*skipped_lines = 0;
	FILE *f = fopen(path, "r");
	if (!f && errno == ENOENT) {
		*missing = json_array();
		return *missing ? 0 : sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	if (!f)
		return sl_err_set(err, SL_EIO, "cannot read '%s': %s", path, strerror(errno));
	struct entry *all = NULL;
	size_t count = 0, cap = 0, lineno = 0;
	char *line = NULL;
	size_t line_cap = 0;
	int rc = 0;
	while (!rc && getline(&line, &line_cap, f) >= 0) {
		lineno++;
		long long step;
		json_t *e = parse_step(line, &step);
		if (!e) {
			if (skipped_lines && line[0] != '\n')
				++*skipped_lines;
			continue;
		}
		if (count == cap) {
			size_t grown_cap = cap ? 2 * cap : 256;
			struct entry *grown = realloc(all, grown_cap * sizeof(*grown));
			if (!grown) {
				json_decref(e);
				rc = sl_err_set(err, SL_ENOMEM, "out of memory");
				break;
			}
			all = grown;
			cap = grown_cap;
		}
		all[count++] = (struct entry){step, lineno, e};
	}
	if (!rc && ferror(f))
		rc = sl_err_set(err, SL_EIO, "cannot read '%s': %s", path, strerror(errno));
	fclose(f);
	free(line);
	long long *sorted = NULL;
	if (!rc && seen->count) {
		sorted = malloc(seen->count * sizeof(*sorted));
		if (!sorted) {
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
		} else {
			memcpy(sorted, seen->steps, seen->count * sizeof(*sorted));
			qsort(sorted, seen->count, sizeof(*sorted), cmp_ll);
		}
	}
	if (!rc)
		*missing = json_array();
	if (!rc && !*missing)
		rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	if (count)
		qsort(all, count, sizeof(*all), cmp_entry);
	for (size_t i = 0; i < count; i++) {
		int last_of_step = i + 1 == count || all[i + 1].step != all[i].step;
		int was_seen = sorted && bsearch(&all[i].step, sorted, seen->count,
						 sizeof(*sorted), cmp_ll);
		if (!rc && last_of_step && !was_seen)
			json_array_append(*missing, all[i].event);
		json_decref(all[i].event);
	}
	free(all);
	free(sorted);
	return rc;
}
