/* Nearest names by edit distance (see nearest_names.h). Invariants: no allocation; O(n · |a| ·
 * |b|) for n candidates, a few hundred microseconds for the zone catalogue, paid only on an
 * error. */
#include "util/nearest_names.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define NAME_MAX_COMPARED 255
#define NEAREST_MAX 16

int sl_nearest_names_distance(const char *a, const char *b)
{
	size_t la = strnlen(a, NAME_MAX_COMPARED), lb = strnlen(b, NAME_MAX_COMPARED);
	int row[NAME_MAX_COMPARED + 1];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diagonal = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int above = row[j];
			int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			int best = diagonal + cost;
			if (above + 1 < best)
				best = above + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diagonal = above;
		}
	}
	return row[lb];
}

const char *sl_nearest_names_list(const char *name, const char *(*candidate)(const void *ctx, int i),
				  const void *ctx, int n, int k, char *buf, size_t size)
{
	int best[NEAREST_MAX], dist[NEAREST_MAX], count = 0;
	if (k > NEAREST_MAX)
		k = NEAREST_MAX;
	for (int i = 0; i < n; i++) {
		int d = sl_nearest_names_distance(name, candidate(ctx, i));
		/* insertion into the sorted few: a later candidate only displaces a farther one */
		int j = count < k ? count++ : k;
		if (j == k && d >= dist[k - 1])
			continue;
		if (j == k)
			j = k - 1;
		while (j > 0 && dist[j - 1] > d) {
			best[j] = best[j - 1];
			dist[j] = dist[j - 1];
			j--;
		}
		best[j] = i;
		dist[j] = d;
	}
	int near_enough = (int)strnlen(name, NAME_MAX_COMPARED) / 2 + 3;
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < count && used + 1 < size; i++) {
		if (i > 0 && dist[i] > near_enough)
			break;
		int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", candidate(ctx, best[i]));
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}
