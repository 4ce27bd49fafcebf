/* Pools and availability traces: sailor.pool/1 JSON and the SOSP'25 trace CSVs (see pool.h).
 * Invariants: counts >= 0; a trace has at least one step; the last step lasts 0 s. */
#include "cluster/pool.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/limits.h"

int sl_pool_from_json(const json_t *root, const char *path, const struct sl_catalogue *cat,
		      struct sl_pool *out, struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	json_t *gpus = NULL;
	int rc = 0;
	json_t *schema = json_object_get(root, "schema");
	if (schema && (!json_is_string(schema) || strcmp(json_string_value(schema), "sailor.pool/1")))
		rc = sl_err_set(err, SL_EINPUT, "schema: expected \"sailor.pool/1\"");
	if (!rc)
		rc = sl_json_get_array(root, "", "gpus", &gpus, err);
	for (size_t i = 0; !rc && i < json_array_size(gpus); i++) {
		json_t *e = json_array_get(gpus, i);
		char ctx[64], names[1024];
		snprintf(ctx, sizeof(ctx), "gpus[%zu]", i);
		const char *gpu = NULL, *zone = NULL;
		long long count = 0;
		rc = sl_json_get_string(e, ctx, "gpu", &gpu, err);
		if (!rc) rc = sl_json_get_string(e, ctx, "zone", &zone, err);
		if (!rc) rc = sl_json_get_int(e, ctx, "count", &count, err);
		if (rc)
			break;
		int g = sl_catalogue_gpu_index(cat, gpu), z = sl_catalogue_zone_index(cat, zone);
		if (g < 0)
			rc = sl_err_set(err, SL_ENOTFOUND, "%s.gpu: unknown GPU type '%s' (known: %s)", ctx,
					gpu, sl_catalogue_gpu_names(cat, names, sizeof(names)));
		else if (z < 0)
			rc = sl_err_set(err, SL_ENOTFOUND, "%s.zone: unknown zone '%s' (nearest: %s; "
					"every zone in data/zones/*.json, more with --zones)", ctx,
					zone, sl_catalogue_zone_suggest(cat, zone, names, sizeof(names)));
		else if (count < 0 || count > SL_MAX_POOL_COUNT)
			rc = sl_err_set(err, SL_EINPUT, "%s.count: must be 0 to %d, got %lld", ctx,
					SL_MAX_POOL_COUNT, count);
		else if (out->counts[g][z] + count > SL_MAX_POOL_COUNT)
			rc = sl_err_set(err, SL_EINPUT,
					"%s.count: %s in %s adds up to %lld GPUs over the entries that "
					"name it, more than %d", ctx, gpu, zone,
					out->counts[g][z] + count, SL_MAX_POOL_COUNT);
		else
			out->counts[g][z] += (int)count;
	}
	if (rc && path)
		sl_err_prefix(err, "pool '%s'", path);
	return rc;
}

int sl_pool_load(const char *path, const struct sl_catalogue *cat, struct sl_pool *out,
		 struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, "pool", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int rc = sl_pool_from_json(root, path, cat, out, err);
	json_decref(root);
	return rc;
}

/* Splits a CSV line in place on commas (no quoting in these files); returns the field count. */
static int split_csv(char *line, char **fields, int max)
{
	int n = 0;
	char *p = line;
	while (n < max) {
		fields[n++] = p;
		char *comma = strchr(p, ',');
		if (!comma)
			break;
		*comma = '\0';
		p = comma + 1;
	}
	for (int i = 0; i < n; i++) {
		char *end = fields[i] + strlen(fields[i]);
		while (end > fields[i] && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
			*--end = '\0';
		while (*fields[i] == ' ')
			fields[i]++;
	}
	return n;
}

#define TRACE_MAX_COLUMNS (SL_MAX_GPU_TYPES * SL_MAX_ZONES + 2)

/* The header ",Timestamp,<GPU>_<zone>,...": each column's GPU type and zone into col_gpu[c] and
 * col_zone[c] (from column 2). */
static int read_trace_header(char **fields, int n, int lineno, const struct sl_catalogue *cat,
			     int *col_gpu, int *col_zone, struct sl_err *err)
{
	if (n < 3 || strcmp(fields[1], "Timestamp"))
		return sl_err_set(err, SL_EINPUT,
				  "line %d: expected a header ',Timestamp,<GPU>_<zone>,...'", lineno);
	int rc = 0;
	for (int c = 2; !rc && c < n; c++) {
		char names[1024];
		char *us = strchr(fields[c], '_');
		if (!us)
			return sl_err_set(err, SL_EINPUT, "line %d: column '%s': expected <GPU>_<zone>",
					  lineno, fields[c]);
		*us = '\0';
		col_gpu[c] = sl_catalogue_gpu_index(cat, fields[c]);
		col_zone[c] = sl_catalogue_zone_index(cat, us + 1);
		if (col_gpu[c] < 0)
			rc = sl_err_set(err, SL_ENOTFOUND,
					"line %d: column %d: unknown GPU type '%s' (known: %s)",
					lineno, c + 1, fields[c],
					sl_catalogue_gpu_names(cat, names, sizeof(names)));
		else if (col_zone[c] < 0)
			rc = sl_err_set(err, SL_ENOTFOUND,
					"line %d: column %d: unknown zone '%s' (known: %s)", lineno,
					c + 1, us + 1, sl_catalogue_zone_names(cat, names, sizeof(names)));
	}
	return rc;
}

/* One row "<index>,<timestamp>,<count>,..." into *p (zeroed here); prev is the row before it,
 * NULL for the first. */
static int read_trace_row(char **fields, int n, int lineno, const int *col_gpu,
			  const int *col_zone, const struct sl_pool *prev, struct sl_pool *p,
			  struct sl_err *err)
{
	memset(p, 0, sizeof(*p));
	char *end;
	errno = 0;
	p->timestamp_s = strtod(fields[1], &end);
	if (end == fields[1] || *end)
		return sl_err_set(err, SL_EINPUT, "line %d: Timestamp '%s' is not a number", lineno,
				  fields[1]);
	/* the steps' durations are differences of timestamps: they must be finite and grow */
	if (errno == ERANGE || !isfinite(p->timestamp_s) || p->timestamp_s < 0 ||
	    p->timestamp_s > SL_MAX_TIMESTAMP_S)
		return sl_err_set(err, SL_EINPUT,
				  "line %d: Timestamp '%s' is out of range: give seconds from 0 to "
				  "%.3g", lineno, fields[1], SL_MAX_TIMESTAMP_S);
	if (prev && !(p->timestamp_s > prev->timestamp_s))
		return sl_err_set(err, SL_EINPUT,
				  "line %d: Timestamp %s does not follow the previous row's %.17g: "
				  "rows must be in increasing time order", lineno, fields[1],
				  prev->timestamp_s);
	for (int c = 2; c < n; c++) {
		long v = strtol(fields[c], &end, 10);
		if (end == fields[c] || *end || v < 0 || v > SL_MAX_POOL_COUNT ||
		    p->counts[col_gpu[c]][col_zone[c]] + v > SL_MAX_POOL_COUNT)
			return sl_err_set(err, SL_EINPUT,
					  "line %d: column %d: count '%s' is not a whole number from 0 "
					  "to %d (over the columns that name the same GPU type and "
					  "zone)", lineno, c + 1, fields[c], SL_MAX_POOL_COUNT);
		p->counts[col_gpu[c]][col_zone[c]] += (int)v;
	}
	return 0;
}

/* parse_trace: a new step whenever the counts change; duration until the next change; the last
 * step lasts 0 s; a first step with no GPUs is dropped. Merges rows[0..count) in place and
 * copies the steps into out. */
static int trace_steps(struct sl_pool *rows, int count, const char *path,
		       struct sl_pool_trace *out, struct sl_err *err)
{
	int steps = 0;
	for (int r = 0; r < count; r++) {
		if (steps > 0 && !memcmp(rows[steps - 1].counts, rows[r].counts,
					 sizeof(rows[r].counts)))
			continue;
		rows[steps++] = rows[r];
	}
	for (int s = 0; s < steps; s++)
		rows[s].duration_s = s + 1 < steps ? rows[s + 1].timestamp_s - rows[s].timestamp_s : 0.0;
	int first = (steps > 1 && sl_pool_total(&rows[0]) == 0) ? 1 : 0;
	out->step_count = steps - first;
	out->steps = malloc((size_t)out->step_count * sizeof(*out->steps));
	if (!out->steps)
		return sl_err_set(err, SL_ENOMEM, "trace '%s': out of memory", path);
	memcpy(out->steps, rows + first, (size_t)out->step_count * sizeof(*out->steps));
	return 0;
}

int sl_trace_load_csv(const char *path, const struct sl_catalogue *cat, struct sl_pool_trace *out,
		      struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	FILE *f = fopen(path, "r");
	if (!f)
		return sl_err_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO,
				  "trace '%s': cannot read: %s", path, strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0, lineno = 0, ncols = 0;
	int col_gpu[TRACE_MAX_COLUMNS], col_zone[TRACE_MAX_COLUMNS];
	char *fields[TRACE_MAX_COLUMNS];
	/* rows: timestamps and pools, before merging equal neighbours */
	int rows = 0, rows_cap = 0;
	struct sl_pool *row_pools = NULL;
	while (!rc && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len == 0 || line[0] == '\n' || (line[0] == '\r' && line[1] == '\n'))
			continue;
		int n = split_csv(line, fields, TRACE_MAX_COLUMNS);
		if (ncols == 0) {
			rc = read_trace_header(fields, n, lineno, cat, col_gpu, col_zone, err);
			if (!rc)
				ncols = n;
			continue;
		}
		if (n != ncols) {
			rc = sl_err_set(err, SL_EINPUT, "line %d: expected %d fields, got %d", lineno,
					ncols, n);
			break;
		}
		if (rows == SL_MAX_TRACE_ROWS) {
			rc = sl_err_set(err, SL_EINPUT, "line %d: more than %d rows: split the trace",
					lineno, SL_MAX_TRACE_ROWS);
			break;
		}
		if (rows == rows_cap) {
			int ncap = rows_cap ? rows_cap * 2 : 16;
			struct sl_pool *np = realloc(row_pools, (size_t)ncap * sizeof(*np));
			if (!np) {
				rc = sl_err_set(err, SL_ENOMEM, "out of memory");
				break;
			}
			row_pools = np;
			rows_cap = ncap;
		}
		rc = read_trace_row(fields, n, lineno, col_gpu, col_zone,
				    rows > 0 ? &row_pools[rows - 1] : NULL, &row_pools[rows], err);
		rows++;
	}
	free(line);
	fclose(f);
	if (!rc && ncols == 0)
		rc = sl_err_set(err, SL_EINPUT, "empty file: expected a header and at least one row");
	if (!rc && rows == 0)
		rc = sl_err_set(err, SL_EINPUT, "no rows after the header");
	if (rc) {
		free(row_pools);
		return sl_err_prefix(err, "trace '%s'", path);
	}
	rc = trace_steps(row_pools, rows, path, out, err);
	free(row_pools);
	return rc;
}

int sl_pool_trace_load(const char *path, const struct sl_catalogue *cat,
		       struct sl_pool_trace *out, struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	FILE *f = fopen(path, "r");
	if (!f)
		return sl_err_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO,
				  "pool '%s': cannot read: %s", path, strerror(errno));
	int c;
	while ((c = fgetc(f)) != EOF && (c == ' ' || c == '\n' || c == '\r' || c == '\t'))
		;
	fclose(f);
	if (c != '{')
		return sl_trace_load(path, cat, out, err);
	out->steps = calloc(1, sizeof(*out->steps));
	if (!out->steps)
		return sl_err_set(err, SL_ENOMEM, "pool '%s': out of memory", path);
	int rc = sl_pool_load(path, cat, out->steps, err);
	if (rc) {
		free(out->steps);
		out->steps = NULL;
		return rc;
	}
	out->step_count = 1;
	return 0;
}

void sl_pool_trace_free(struct sl_pool_trace *trace)
{
	if (!trace)
		return;
	free(trace->steps);
	trace->steps = NULL;
	trace->step_count = 0;
}

int sl_pool_zones(const struct sl_pool *pool, int *zones, int max)
{
	/* row by row, the way the counts lie in memory (the planner asks this for every search
	 * and zone set: zone by zone across the types it was 2% of a plan's instructions) */
	unsigned char any[SL_MAX_ZONES] = {0};
	for (int g = 0; g < SL_MAX_GPU_TYPES; g++)
		for (int z = 0; z < SL_MAX_ZONES; z++)
			any[z] |= pool->counts[g][z] > 0;
	int n = 0;
	for (int z = 0; z < SL_MAX_ZONES; z++) {
		if (any[z] && n < max)
			zones[n] = z;
		n += any[z];
	}
	return n;
}

long long sl_pool_total(const struct sl_pool *pool)
{
	long long n = 0;
	for (int g = 0; g < SL_MAX_GPU_TYPES; g++)
		for (int z = 0; z < SL_MAX_ZONES; z++)
			n += pool->counts[g][z];
	return n;
}

long long sl_pool_gpu_total(const struct sl_pool *pool, int gpu)
{
	long long n = 0;
	for (int z = 0; z < SL_MAX_ZONES; z++)
		n += pool->counts[gpu][z];
	return n;
}

json_t *sl_pool_to_json(const struct sl_pool *pool, const struct sl_catalogue *cat)
{
	json_t *root = json_object();
	json_object_set_new(root, "schema", json_string("sailor.pool/1"));
	json_t *gpus = json_array();
	for (int g = 0; g < cat->gpu_count; g++)
		for (int z = 0; z < cat->zone_count; z++) {
			if (pool->counts[g][z] <= 0)
				continue;
			json_t *e = json_object();
			json_object_set_new(e, "gpu", json_string(cat->gpus[g].name));
			json_object_set_new(e, "zone", json_string(cat->zones[z].name));
			json_object_set_new(e, "count", json_integer(pool->counts[g][z]));
			json_array_append_new(gpus, e);
		}
	json_object_set_new(root, "gpus", gpus);
	return root;
}

int sl_trace_check_zones(const char *path, const struct sl_catalogue *cat, struct sl_err *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0; /* the loader says why */
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, rc = 0;
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		if (line[strspn(line, " \r\n")] != '\0')
			break;
	}
	fclose(f);
	char *fields[TRACE_MAX_COLUMNS];
	int n = line ? split_csv(line, fields, TRACE_MAX_COLUMNS) : 0;
	for (int c = 2; c < n && !rc && !strcmp(fields[1], "Timestamp"); c++) {
		char *us = strchr(fields[c], '_');
		if (!us || sl_catalogue_zone_index(cat, us + 1) >= 0)
			continue;
		char names[256];
		rc = sl_err_set(err, SL_ENOTFOUND, "trace '%s': line %d: column %d: unknown zone '%s' "
				"(nearest: %s)", path, lineno, c + 1, us + 1,
				sl_catalogue_zone_suggest(cat, us + 1, names, sizeof(names)));
	}
	free(line);
	return rc;
}

int sl_trace_load(const char *path, const struct sl_catalogue *cat, struct sl_pool_trace *out,
		  struct sl_err *err)
{
	int rc = sl_trace_check_zones(path, cat, err);
	return rc ? rc : sl_trace_load_csv(path, cat, out, err);
}
