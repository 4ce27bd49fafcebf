/* Fuzz target: the controller's pool sources (src/ctl/pool_watch.c), what `sailor control
 * --pool FILE` and `--trace FILE [--time-scale X]` read, driven through sl_ctl_pool_watch_init
 * and _poll as the controller's loop drives them. fuzz_pool covers the two parsers on their own;
 * this target checks what the watch does with what they return.
 *
 * The input is one file, or two separated by a form feed (0x0c): the first is read at start;
 * a first non-blank '{' makes it a pool file, anything else a trace.
 *   pool file  the second part (when given) replaces the file, as a writer replacing it
 *              atomically would (a new file under the same name), and the watch is polled.
 *              Oracle: the pool file read on its own (sl_pool_load). If it parses, the poll
 *              returns 1 exactly when its counts differ from the first file's and the watch then
 *              holds them; if not, the poll reports SL_EINPUT once (a second poll is quiet) and
 *              the first pool stays in force.
 *   trace      polled at the middle of each step of positive length (the first 64 such steps,
 *              at a time scale of 1, 1e-9, 1e9 or 0.5 wall seconds per trace second, chosen by
 *              the input's length): the watch must then be at exactly that step, holding its
 *              pool, and it never goes back; far in the future it is at the last step. */
#include "cluster/catalogue.h"
#include "cluster/pool.h"
#include "ctl/pool_watch.h"
#include "fuzz_util.h"

static int same_counts(const struct sl_pool *a, const struct sl_pool *b)
{
	return !memcmp(a->counts, b->counts, sizeof(a->counts));
}

static void check_pool(const struct sl_pool *p)
{
	for (int g = 0; g < SL_MAX_GPU_TYPES; g++)
		for (int z = 0; z < SL_MAX_ZONES; z++)
			fuzz_assert(p->counts[g][z] >= 0 && p->counts[g][z] <= 1000000);
}

static void pool_file(const uint8_t *a, size_t na, const uint8_t *b, size_t nb, int has_b,
		      const struct sl_catalogue *cat)
{
	char path[512];
	snprintf(path, sizeof(path), "%s", fuzz_write("watch/pool.json", a, na));
	struct sl_ctl_pool_watch w;
	struct sl_err err = {0};
	if (sl_ctl_pool_watch_init(&w, path, NULL, 1.0, cat, 0.0, &err)) {
		fuzz_assert(err.msg[0]);
		sl_ctl_pool_watch_free(&w);
		return;
	}
	check_pool(&w.current);
	struct sl_pool first = w.current;
	/* nothing changed: a poll is quiet */
	fuzz_assert(sl_ctl_pool_watch_poll(&w, 1.0, &err) == 0);
	if (has_b) {
		fuzz_write("watch/pool.json", b, nb);
		struct sl_pool alone;
		struct sl_err e = {0};
		int parses = sl_pool_load(path, cat, &alone, &e) == 0;
		err.msg[0] = '\0';
		int rc = sl_ctl_pool_watch_poll(&w, 2.0, &err);
		if (parses) {
			fuzz_assert(rc == !same_counts(&alone, &first));
			fuzz_assert(same_counts(&w.current, &alone));
		} else {
			fuzz_assert(rc == SL_EINPUT && err.msg[0]);
			fuzz_assert(same_counts(&w.current, &first));
			fuzz_assert(sl_ctl_pool_watch_poll(&w, 3.0, &err) == 0);
			fuzz_assert(same_counts(&w.current, &first));
		}
		check_pool(&w.current);
	}
	sl_ctl_pool_watch_free(&w);
}

static void trace(const uint8_t *a, size_t na, size_t size, const struct sl_catalogue *cat)
{
	static const double scales[4] = {1.0, 1e-9, 1e9, 0.5};
	double scale = scales[size % 4];
	const char *path = fuzz_write("watch/trace.csv", a, na);
	struct sl_ctl_pool_watch w;
	struct sl_err err = {0};
	const double start = 1000.0;
	if (sl_ctl_pool_watch_init(&w, NULL, path, scale, cat, start, &err)) {
		fuzz_assert(err.msg[0]);
		sl_ctl_pool_watch_free(&w);
		return;
	}
	int n = w.trace.step_count;
	fuzz_assert(n >= 1 && w.trace_step == 0);
	fuzz_assert(same_counts(&w.current, &w.trace.steps[0]));
	double begin = 0; /* trace seconds before step i */
	int checked = 0, last = 0;
	for (int i = 0; i < n && checked < 64; i++) {
		double d = w.trace.steps[i].duration_s;
		fuzz_assert(d >= 0 && d < 1e300);
		if (d > 0 && i + 1 < n) {
			double now = start + (begin + d / 2) * scale;
			int rc = sl_ctl_pool_watch_poll(&w, now, &err);
			fuzz_assert(rc == 0 || rc == 1);
			fuzz_assert(w.trace_step >= last);
			/* the middle of a step is inside it unless rounding at this magnitude hides
			 * a step too short to tell apart from its neighbours */
			if (d * scale > 1e-9 * (start + begin * scale))
				fuzz_assert(w.trace_step == i);
			last = w.trace_step;
			fuzz_assert(same_counts(&w.current, &w.trace.steps[w.trace_step]));
			check_pool(&w.current);
			checked++;
		}
		begin += d;
	}
	int rc = sl_ctl_pool_watch_poll(&w, start + (begin + 1) * scale * 2 + 1, &err);
	fuzz_assert(rc == 0 || rc == 1);
	fuzz_assert(w.trace_step == n - 1);
	fuzz_assert(same_counts(&w.current, &w.trace.steps[n - 1]));
	char buf[64];
	sl_ctl_pool_watch_describe(&w, buf, sizeof(buf));
	sl_ctl_pool_watch_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_catalogue cat;
	static int loaded;
	struct sl_err err = {0};
	fuzz_setup();
	if (!loaded && sl_catalogue_load(NULL, &cat, &err)) {
		fprintf(stderr, "fuzz_pool_watch: %s\n", err.msg);
		abort();
	}
	loaded = 1;
	const uint8_t *ff = memchr(data, '\f', size);
	size_t na = ff ? (size_t)(ff - data) : size;
	size_t i = 0;
	while (i < na && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
		i++;
	if (i < na && data[i] == '{')
		pool_file(data, na, ff ? ff + 1 : NULL, ff ? size - na - 1 : 0, ff != NULL, &cat);
	else
		trace(data, na, size, &cat);
	return 0;
}
