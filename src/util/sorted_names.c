/* Names kept sorted: see sorted_names.h. */
#include "util/sorted_names.h"

#include <stdlib.h>
#include <string.h>

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int sl_sorted_names_init(struct sl_sorted_names *s, const void *items, int count, size_t stride)
{
	s->count = 0;
	s->v = malloc(sizeof(*s->v) * (size_t)(count > 0 ? count : 1));
	if (!s->v)
		return -1;
	for (int i = 0; i < count; i++)
		s->v[i] = (const char *)items + (size_t)i * stride;
	s->count = count;
	qsort(s->v, (size_t)count, sizeof(*s->v), compare_names);
	return 0;
}

int sl_sorted_names_has(const struct sl_sorted_names *s, const char *name)
{
	return s->count > 0 &&
	       bsearch(&name, s->v, (size_t)s->count, sizeof(*s->v), compare_names) != NULL;
}

void sl_sorted_names_free(struct sl_sorted_names *s)
{
	free(s->v);
	s->v = NULL;
	s->count = 0;
}
