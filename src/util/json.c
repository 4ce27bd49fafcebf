/* JSON helpers: see json.h. */
#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/limits.h"

/* The whole file at path in a malloc'd buffer (*size bytes); NULL with err set. */
static char *read_whole(const char *path, const char *what, size_t *size, struct sl_err *err)
{
	FILE *file = fopen(path, "rb");
	if (!file) {
		sl_err_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO, "%s '%s': cannot read: %s",
			   what, path, strerror(errno));
		return NULL;
	}
	/* read whole, then parse from memory: json_loadf reads through getc, one locked call per
	 * byte, which made loading the shipped data most of a short command's run time */
	char *text = NULL;
	size_t capacity = 0;
	*size = 0;
	for (;;) {
		if (*size + 65536 > capacity) {
			capacity = capacity ? 2 * capacity : 262144;
			char *grown = realloc(text, capacity);
			if (!grown) {
				free(text);
				fclose(file);
				sl_err_set(err, SL_ENOMEM, "%s '%s': out of memory", what, path);
				return NULL;
			}
			text = grown;
		}
		size_t got = fread(text + *size, 1, capacity - *size, file);
		*size += got;
		if (got == 0)
			break;
		if (*size > SL_MAX_JSON_FILE_BYTES) {
			free(text);
			fclose(file);
			sl_err_set(err, SL_EINPUT, "%s '%s': larger than %d MiB: not a file sailor "
				   "reads (the shipped ones are a few hundred KiB)", what, path,
				   SL_MAX_JSON_FILE_BYTES >> 20);
			return NULL;
		}
	}
	int failed = ferror(file);
	fclose(file);
	if (failed) {
		free(text);
		sl_err_set(err, SL_EIO, "%s '%s': cannot read: read error", what, path);
		return NULL;
	}
	return text;
}

static int json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Ends a token on its own: whitespace beside it separates nothing. */
static int delimiter(char c)
{
	return c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ',' || c == '"';
}

/* text[0..size-1] without the whitespace between tokens, in place; returns the new size. The
 * shipped files are indented (half their bytes are spaces and newlines), and jansson reads
 * each byte through a stream call: the squeezed text parses in 13% fewer instructions. Strings
 * are copied as they are (escapes included); a run of whitespace between two tokens that do
 * not end themselves (numbers, literals, stray characters: "1 2") stays one space, so no
 * two tokens merge and a malformed file stays malformed. */
static size_t squeeze_whitespace(char *text, size_t size)
{
	size_t out = 0;
	for (size_t i = 0; i < size;) {
		char c = text[i];
		if (c == '"') { /* a string, to its closing quote */
			text[out++] = text[i++];
			while (i < size && text[i] != '"') {
				if (text[i] == '\\' && i + 1 < size)
					text[out++] = text[i++];
				text[out++] = text[i++];
			}
			if (i < size)
				text[out++] = text[i++];
		} else if (json_space(c)) {
			while (i < size && json_space(text[i]))
				i++;
			if (out > 0 && i < size && !delimiter(text[out - 1]) && !delimiter(text[i]))
				text[out++] = ' ';
		} else {
			text[out++] = text[i++];
		}
	}
	return out;
}

json_t *sl_json_load_file(const char *path, const char *what, struct sl_err *err)
{
	size_t size;
	char *text = read_whole(path, what, &size, err);
	if (!text)
		return NULL;
	json_error_t jerr;
	json_t *root = json_loadb(text, squeeze_whitespace(text, size), JSON_REJECT_DUPLICATES,
				  &jerr);
	free(text);
	if (root)
		return root;
	/* malformed: the error's line and column are the file's own, so parse it as it is */
	if (!(text = read_whole(path, what, &size, err)))
		return NULL;
	root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!root)
		sl_err_set(err, SL_EINPUT, "%s '%s': line %d column %d: %s", what, path, jerr.line,
			   jerr.column, jerr.text);
	return root;
}

static const char *join(const char *ctx) { return ctx && *ctx ? "." : ""; }

static json_t *field(const json_t *obj, const char *ctx, const char *key, struct sl_err *err)
{
	if (!json_is_object(obj)) {
		sl_err_set(err, SL_EINPUT, "%s: expected an object", ctx && *ctx ? ctx : "top level");
		return NULL;
	}
	json_t *value = json_object_get(obj, key);
	if (!value || json_is_null(value))
		sl_err_set(err, SL_EINPUT, "%s%s%s: missing field", ctx ? ctx : "", join(ctx), key);
	return value && !json_is_null(value) ? value : NULL;
}

int sl_json_as_number(const json_t *value, const char *ctx, double *out, struct sl_err *err)
{
	if (!json_is_number(value))
		return sl_err_set(err, SL_EINPUT, "%s: expected a number", ctx);
	*out = json_number_value(value);
	return 0;
}

int sl_json_as_int(const json_t *value, const char *ctx, long long *out, struct sl_err *err)
{
	if (json_is_integer(value)) {
		*out = json_integer_value(value);
		return 0;
	}
	if (json_is_real(value)) {
		double v = json_real_value(value);
		if (v == floor(v) && fabs(v) < 9e15) {
			*out = (long long)v;
			return 0;
		}
	}
	return sl_err_set(err, SL_EINPUT, "%s: expected an integer", ctx);
}

static void field_ctx(char *buf, size_t size, const char *ctx, const char *key)
{
	snprintf(buf, size, "%s%s%s", ctx ? ctx : "", join(ctx), key);
}

int sl_json_get_int(const json_t *obj, const char *ctx, const char *key, long long *out,
		    struct sl_err *err)
{
	json_t *value = field(obj, ctx, key, err);
	if (!value)
		return SL_EINPUT;
	char where[256];
	field_ctx(where, sizeof(where), ctx, key);
	return sl_json_as_int(value, where, out, err);
}

int sl_json_get_number(const json_t *obj, const char *ctx, const char *key, double *out,
		       struct sl_err *err)
{
	json_t *value = field(obj, ctx, key, err);
	if (!value)
		return SL_EINPUT;
	char where[256];
	field_ctx(where, sizeof(where), ctx, key);
	return sl_json_as_number(value, where, out, err);
}

int sl_json_get_string(const json_t *obj, const char *ctx, const char *key, const char **out,
		       struct sl_err *err)
{
	json_t *value = field(obj, ctx, key, err);
	if (!value)
		return SL_EINPUT;
	if (!json_is_string(value))
		return sl_err_set(err, SL_EINPUT, "%s%s%s: expected a string", ctx ? ctx : "",
				  join(ctx), key);
	*out = json_string_value(value);
	return 0;
}

int sl_json_get_array(const json_t *obj, const char *ctx, const char *key, json_t **out,
		      struct sl_err *err)
{
	json_t *value = field(obj, ctx, key, err);
	if (!value)
		return SL_EINPUT;
	if (!json_is_array(value))
		return sl_err_set(err, SL_EINPUT, "%s%s%s: expected an array", ctx ? ctx : "",
				  join(ctx), key);
	*out = value;
	return 0;
}

int sl_json_get_object(const json_t *obj, const char *ctx, const char *key, json_t **out,
		       struct sl_err *err)
{
	json_t *value = field(obj, ctx, key, err);
	if (!value)
		return SL_EINPUT;
	if (!json_is_object(value))
		return sl_err_set(err, SL_EINPUT, "%s%s%s: expected an object", ctx ? ctx : "",
				  join(ctx), key);
	*out = value;
	return 0;
}

int sl_json_opt_int(const json_t *obj, const char *ctx, const char *key, long long *out,
		    struct sl_err *err)
{
	json_t *value = json_is_object(obj) ? json_object_get(obj, key) : NULL;
	if (!value || json_is_null(value))
		return 0;
	char where[256];
	field_ctx(where, sizeof(where), ctx, key);
	return sl_json_as_int(value, where, out, err);
}

int sl_json_opt_number(const json_t *obj, const char *ctx, const char *key, double *out,
		       struct sl_err *err)
{
	json_t *value = json_is_object(obj) ? json_object_get(obj, key) : NULL;
	if (!value || json_is_null(value))
		return 0;
	char where[256];
	field_ctx(where, sizeof(where), ctx, key);
	return sl_json_as_number(value, where, out, err);
}

int sl_json_print(FILE *stream, const json_t *value)
{
	if (json_dumpf(value, stream, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) != 0)
		return SL_EIO;
	fputc('\n', stream);
	return 0;
}

int sl_json_check_fields(const json_t *obj, const char *ctx, const char *const *allowed, size_t n,
			struct sl_err *err)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)obj, key, v)
	{
		size_t i = 0;
		while (i < n && strcmp(allowed[i], key))
			i++;
		if (i == n) {
			char list[512];
			size_t used = 0;
			list[0] = 0;
			for (size_t k = 0; k < n && used + 1 < sizeof(list); k++) {
				int w = snprintf(list + used, sizeof(list) - used, "%s%s", k ? ", " : "",
						 allowed[k]);
				if (w < 0)
					break;
				used += (size_t)w;
			}
			return sl_err_set(err, SL_EINPUT, "%s%s%s: unknown field (allowed: %s)", ctx,
					  ctx[0] ? "." : "", key, list);
		}
	}
	return 0;
}
