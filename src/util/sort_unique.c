/* Sorting doubles and dropping repeats, for the planner's time thresholds (sort_unique.h). */
#include <string.h>

#include "util/sort_unique.h"

/* Insertion sort of values[0..n), ascending. */
static void insertion_sort(double *values, int n)
{
	for (int i = 1; i < n; i++) {
		double v = values[i];
		int j = i;
		for (; j > 0 && values[j - 1] > v; j--)
			values[j] = values[j - 1];
		values[j] = v;
	}
}

/* Runs of 16 by insertion sort, then merged bottom-up: the planner's arrays hold up to
 * P x types x 4 values (hundreds for deep pipelines, where a plain insertion sort was a tenth of
 * the whole search), and qsort's call overhead showed in profiles for the short ones. */
int sl_sort_unique(double *values, int n, double *scratch)
{
	enum { RUN = 16 };
	for (int i = 0; i < n; i += RUN)
		insertion_sort(values + i, n - i < RUN ? n - i : RUN);
	double *from = values, *to = scratch;
	for (int width = RUN; width < n; width *= 2) {
		for (int lo = 0; lo < n; lo += 2 * width) {
			int mid = lo + width < n ? lo + width : n;
			int hi = lo + 2 * width < n ? lo + 2 * width : n;
			int a = lo, b = mid, o = lo;
			while (a < mid && b < hi)
				to[o++] = from[b] < from[a] ? from[b++] : from[a++];
			while (a < mid)
				to[o++] = from[a++];
			while (b < hi)
				to[o++] = from[b++];
		}
		double *swap = from;
		from = to;
		to = swap;
	}
	if (from != values)
		memcpy(values, from, sizeof(*values) * (size_t)n);
	int unique = 0;
	for (int i = 0; i < n; i++)
		if (!unique || values[i] != values[unique - 1])
			values[unique++] = values[i];
	return unique;
}

