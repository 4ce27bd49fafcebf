/* Names kept sorted for membership tests: a binary search per name, not a scan of every entry
 * (the zone files' checks looked up each pair's names among the world's few hundred zones). */
#ifndef SL_UTIL_SORTED_NAMES_H
#define SL_UTIL_SORTED_NAMES_H

#include <stddef.h>

struct sl_sorted_names {
	const char **v; /* borrowed strings, sorted by strcmp */
	int count;
};

/* The names of count items laid out stride bytes apart, each a string at the item's start (a
 * struct whose first member is its name). Returns 0, or -1 when out of memory (s is then empty,
 * and freeing it is still right). */
int sl_sorted_names_init(struct sl_sorted_names *s, const void *items, int count, size_t stride);

int sl_sorted_names_has(const struct sl_sorted_names *s, const char *name);

void sl_sorted_names_free(struct sl_sorted_names *s);

#endif
