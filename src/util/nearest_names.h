/* The names nearest to a misspelt one, for error messages: "unknown zone 'europe-west4-z'
 * (nearest: europe-west4-a, europe-west4-b, europe-west4-c)". With a catalogue of hundreds of
 * zones, listing every known name helps no one; the few closest by edit distance do.
 *
 * Distance: Levenshtein (insertions, deletions and substitutions each cost 1), on bytes, names
 * compared case-insensitively (a user writes "US-EAST1-B" for "us-east1-b"). Ties keep the
 * order of the candidates, so messages are stable.
 */
#ifndef SL_UTIL_NEAREST_NAMES_H
#define SL_UTIL_NEAREST_NAMES_H

#include <stddef.h>

/* The number of edits that turn a into b (case-insensitive); names longer than 255 bytes are
 * compared on their first 255. */
int sl_nearest_names_distance(const char *a, const char *b);

/* Writes into buf the at most k candidates nearest to name, comma-separated, nearest first
 * (ties in candidate order); returns buf. name(ctx, i) is candidate i of n. Candidates farther
 * than half name's length plus 3 are left out unless nothing is nearer, so that an unrelated
 * word gets the nearest few anyway. */
const char *sl_nearest_names_list(const char *name, const char *(*candidate)(const void *ctx, int i),
				  const void *ctx, int n, int k, char *buf, size_t size);

#endif
