/* What a token trained by an island plan is worth against a token of a synchronous plan: the
 * ratio of the tokens a synchronous run needs to reach a validation loss to the tokens an island
 * run needs to reach the same loss (docs/design/islands.md#the-token-value). Measured on our
 * runtime (bench/islands/token_value.py writes data/islands/token_value.json from the curves of
 * bench/islands/run.sh); a user gives their own as one number or a file of the same schema.
 *
 * File (sailor.token_value/1): {"schema", "source": text, "measurements": [{"islands": n,
 * "inner_steps": H, "wire": "fp32"|"bf16"|"int8", "value": v in (0, 1]}, ...]} (other fields,
 * such as the measured ratio before capping at 1, are kept for people and ignored here).
 *
 * Lookup (sl_token_value_of): fp32's measurements, times a factor for another wire (the mean of
 * its value over fp32's where both were measured at one (islands, H), at most 1; an unmeasured wire the next
 * coarser one's, 1 for int8); per measured island count a curve in H, linear in log H through (H = 1, 1) (one inner
 * step is the synchronous step up to the outer optimizer) and the measured points, beyond the
 * largest H the last measured value; between measured island counts linear in the count, beyond
 * them the nearest count's. So the table decides, not a constant; outside the measured range
 * sl_token_value_of says so (*extrapolated). */
#ifndef SL_SEARCH_TOKEN_VALUE_H
#define SL_SEARCH_TOKEN_VALUE_H

#include "plan/islands.h"
#include "util/err.h"

#define SL_TOKEN_VALUE_MAX_POINTS 64

struct sl_token_value_point {
	int islands, inner_steps;
	enum sl_islands_wire wire;
	double value;
};

struct sl_token_value {
	double constant;         /* > 0: every island plan's tokens are worth this (the user's) */
	int count;
	struct sl_token_value_point points[SL_TOKEN_VALUE_MAX_POINTS];
	char source[512];        /* where the figures came from (the file's "source" or path) */
};

/* The shipped measurements (data/islands/token_value.json). */
int sl_token_value_load_default(struct sl_token_value *out, struct sl_err *err);

/* A file of the schema above; errors name the file, the field and the allowed range. */
int sl_token_value_load(const char *path, struct sl_token_value *out, struct sl_err *err);

/* --island-token-value's argument: a number in (0, 1] or a file path. */
int sl_token_value_parse(const char *arg, struct sl_token_value *out, struct sl_err *err);

/* The value of a token of a plan of `islands` islands, H inner steps a round, this wire;
 * *extrapolated (may be NULL) is set when (islands, H) lies outside the measurements. */
double sl_token_value_of(const struct sl_token_value *tv, int islands, int inner_steps,
			 enum sl_islands_wire wire, int *extrapolated);

#endif
