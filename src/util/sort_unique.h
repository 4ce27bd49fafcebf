/* Doubles sorted ascending with repeats dropped, in place: the planner's time thresholds
 * (search/thresholds.c), sorted once per shape. */
#ifndef SL_UTIL_SORT_UNIQUE_H
#define SL_UTIL_SORT_UNIQUE_H

/* Sorts values[0..n) ascending and drops repeats; returns how many remain. scratch holds n
 * values (any contents). */
int sl_sort_unique(double *values, int n, double *scratch);

#endif
