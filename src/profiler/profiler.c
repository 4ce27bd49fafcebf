/* The layer profiler (see profiler.h): every (micro-batch size, TP degree) entry measured in
 * interleaved passes (profiler_measure.c), the medians over the repeats, the profile and its
 * provenance as JSON, and the profile file.
 * Invariants: pass r brings every entry's repeat r, so that a slow spell of the machine falls on
 * a few samples of each entry; every pass after the first makes the calls per sample the first
 * counted; the profile lists entries in (mbs, tp) order. */
#include "profiler/profiler.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/comm.h"
#include "model/model_config.h"
#include "profiler/profiler_measure.h"
#include "train/cpu/kernels.h"
#include "util/atomic_file.h"
#include "util/json.h"
#include "util/clock.h"

static const char *const phase_names[PHASES] = {
	"forward_embedding", "forward_block", "forward_head", "backward_head", "backward_block",
	"backward_embedding", "update_embedding", "update_block", "update_head",
	"recompute_attention"};

/* Seconds the whole machine's CPUs have been busy (/proc/stat, which network namespaces do not
 * separate): what runs beside the profiled ranks moves their times through shared caches and
 * cores, so each entry records how busy the machine was. 0 where it cannot be read. */
static double machine_busy_s(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return 0;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		       &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 8)
		return 0;
	/* user, nice, system, irq, softirq, steal: not idle (v[3]) or iowait (v[4]) */
	double busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]);
	return busy / (double)sysconf(_SC_CLK_TCK);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of phase p over the timed iterations of samples ([iteration][PHASES], after
 * warmup), and its spread (max - min) / median; col is scratch of repeats doubles. */
static void median_of_repeats(const double *samples, int warmup, int repeats, int p, double *col,
			      double *median, double *spread)
{
	for (int r = 0; r < repeats; r++)
		col[r] = samples[(size_t)(warmup + r) * PHASES + (size_t)p];
	qsort(col, (size_t)repeats, sizeof(double), cmp_double);
	int h = repeats / 2;
	*median = repeats % 2 ? col[h] : 0.5 * (col[h - 1] + col[h]);
	*spread = *median > 0 ? (col[repeats - 1] - col[0]) / *median : 0;
}

static void iso_date(char *buf, size_t size)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *layer_memory(const struct job *j, int k)
{
	return json_pack("{s:I, s:I}", "params_bytes", (json_int_t)j->layer_param_bytes[k],
			 "activations_bytes", (json_int_t)j->layer_cache_bytes[k]);
}

/* The options sl_profiler_run refuses for this model: a sequence longer than the model's, no
 * sizes or counts below 1, a TP degree that does not divide its heads and ffn_hidden, an MPI
 * job that is not exactly the one TP degree's ranks. */
static int check_options(const struct sl_profiler_options *o, const struct sl_model_config *model,
			 int seq, struct sl_err *err)
{
	if (seq > model->seq_len)
		return sl_err_set(err, SL_EUSAGE, "--seq-len %d: model '%s' allows at most %d", seq,
				  model->name, model->seq_len);
	if (o->mbs_count < 1 || o->tp_count < 1 || o->repeats < 1 || o->threads < 1 ||
	    o->warmup < 0)
		return sl_err_set(err, SL_EUSAGE, "profiler: empty --mbs or --tp, or repeats/threads "
				  "below 1");
	for (int i = 0; i < o->tp_count; i++) {
		int tp = o->tp[i];
		if (tp > MAX_TP || model->heads % tp || model->ffn_hidden % tp || model->vocab < tp)
			return sl_err_set(err, SL_EUSAGE, "--tp %d: model '%s' has %d heads and "
					  "ffn_hidden %d: a TP degree must divide both (and be at most "
					  "%d)", tp, model->name, model->heads, model->ffn_hidden, MAX_TP);
	}
	if (o->comm && (o->tp_count != 1 || o->tp[0] != o->comm->size))
		return sl_err_set(err, SL_EUSAGE, "--tp: an MPI job of %d ranks profiles TP %d only "
				  "(one TP rank per MPI rank)", o->comm->size, o->comm->size);
	return 0;
}

/* The profile's "source" but its entries: what measured what, where, when and how; cpu_basis:
 * the times kept are CPU time / the quota's cores (sl_profiler_run). */
static json_t *source_json(const struct sl_profiler_options *o, const struct sl_model_config *model,
			   int seq, const char *host, const char *date, int cpu_basis)
{
	json_t *src = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:i, s:s}",
				"profiler", "sailor profile (our runtime's CPU layers, src/train)",
				"model", model->name, "device_type", o->gpu ? o->gpu : "",
				"host", host, "threads_per_rank", o->threads,
				"openblas_core", sl_cpu_blas_core(), "warmup", o->warmup,
				"repeats", o->repeats, "seq_len", seq, "date", date);
	json_object_set_new(src, "tp_ranks_as",
			    json_string(o->comm ? "MPI ranks of one host, all-reduce over MPI"
						: "threads with an in-process all-reduce"));
	json_object_set_new(
		src, "statistic",
		json_string(cpu_basis ? "median over repeats of the largest CPU time of a TP rank / "
					"the device's CPU quota (cores), the time at the quota's "
					"average rate; median_wall_s: the slowest rank's wall time; "
					"spread = (max - min) / median"
				      : "median over repeats of the slowest TP rank's time; spread = "
					"(max - min) / median"));
	if (cpu_basis)
		json_object_set_new(src, "cpu_quota_cores", json_real(o->cpu_quota_cores));
	if (o->command)
		json_object_set_new(src, "command", json_string(o->command));
	return src;
}

/* Every entry's samples as the passes bring them (entry e = mbs index x tp_count + tp index),
 * and the scratch of one pass. */
struct samples {
	struct job *jobs;                /* as pass 0 left each: calls per sample, memory */
	double *all_times, *all_cpu;     /* per entry [warmup + repeats][PHASES] (struct job) */
	double *entry_wall, *entry_busy; /* per entry: wall and machine-busy seconds, all passes */
	double *pass_times, *pass_cpu;   /* one entry's pass: [warmup + 1][PHASES] */
	double *col;                     /* scratch of repeats doubles (median_of_repeats) */
};

static int samples_alloc(struct samples *s, const struct sl_profiler_options *o,
			 struct sl_err *err)
{
	int E = o->mbs_count * o->tp_count, iterations = o->warmup + o->repeats;
	s->jobs = calloc((size_t)E, sizeof(*s->jobs));
	s->all_times = calloc((size_t)E * iterations * PHASES, sizeof(double));
	s->all_cpu = calloc((size_t)E * iterations * PHASES, sizeof(double));
	s->entry_wall = calloc((size_t)E, sizeof(double));
	s->entry_busy = calloc((size_t)E, sizeof(double));
	s->pass_times = calloc((size_t)(o->warmup + 1) * PHASES, sizeof(double));
	s->pass_cpu = calloc((size_t)(o->warmup + 1) * PHASES, sizeof(double));
	s->col = calloc((size_t)o->repeats, sizeof(double));
	if (!s->jobs || !s->all_times || !s->all_cpu || !s->entry_wall || !s->entry_busy ||
	    !s->pass_times || !s->pass_cpu || !s->col)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	return 0;
}

static void samples_free(struct samples *s)
{
	free(s->jobs);
	free(s->all_times);
	free(s->all_cpu);
	free(s->entry_wall);
	free(s->entry_busy);
	free(s->pass_times);
	free(s->pass_cpu);
	free(s->col);
}

/* Interleaved passes: pass r times every entry's repeat r (after a warm-up of its own), so that
 * a slow spell of the machine (a VM whose host is busy: docs/design/testbed.md, what was found)
 * falls on a few samples of every entry, which their medians drop, instead of on every sample of
 * the entries measured during it. Pass 0 also counts the calls a sample needs and takes the memory figures, as one
 * run of all repeats did. */
static int run_passes(const struct sl_profiler_options *o, const struct sl_model_config *model,
		      int seq, struct samples *s, struct sl_err *err)
{
	int iterations = o->warmup + o->repeats;
	int E = o->mbs_count * o->tp_count;
	int rc = 0;
	for (int r = 0; r < o->repeats && !rc; r++)
		for (int e = 0; e < E && !rc; e++) {
			int a = e / o->tp_count, b = e % o->tp_count;
			struct job j = {.model = model, .mbs = o->mbs[a], .tp = o->tp[b], .seq = seq,
					.threads = o->threads, .iterations = o->warmup + 1,
					.min_sample_s = o->min_sample_s, .times = s->pass_times,
					.cpu_times = s->pass_cpu};
			for (int p = 0; p < PHASES; p++)
				j.calls[p] = r ? s->jobs[e].calls[p] : 1;
			j.calls_known = r > 0;
			double t0 = sl_now_s(), busy0 = machine_busy_s();
			rc = sl_profiler_measure(&j, o->comm, err);
			s->entry_wall[e] += sl_now_s() - t0;
			s->entry_busy[e] += machine_busy_s() - busy0;
			if (rc)
				break;
			if (r == 0)
				s->jobs[e] = j;
			/* an entry's rows: the first pass's warm-up, then one timed repeat per pass
			 * (row warmup + r); pass 0 brings rows 0..warmup, a later pass its last row */
			size_t to = r == 0 ? 0 : (size_t)(o->warmup + r) * PHASES;
			size_t from = r == 0 ? 0 : (size_t)o->warmup * PHASES;
			size_t n = (size_t)(r == 0 ? o->warmup + 1 : 1) * PHASES * sizeof(double);
			memcpy(s->all_times + (size_t)e * iterations * PHASES + to, s->pass_times + from,
			       n);
			memcpy(s->all_cpu + (size_t)e * iterations * PHASES + to, s->pass_cpu + from, n);
		}
	return rc;
}

/* One entry's figures over its repeats. */
struct entry_stats {
	double med[PHASES], spread[PHASES];           /* the times kept */
	double wall_med[PHASES], wall_spread[PHASES]; /* the slowest rank's wall times */
	double cpu_per_wall; /* the ranks' CPU time over their wall time, timed repeats */
	int cpu_basis;       /* the times kept are CPU time / quota cores */
	double update;       /* the optimizer step the profile gives every layer */
};

/* Entry ei's medians and spreads; cpu_basis: the run asks for the CPU basis (sl_profiler_run). */
static void entry_stats(const struct sl_profiler_options *o, const struct samples *s, int ei,
			int cpu_basis, struct entry_stats *st)
{
	int iterations = o->warmup + o->repeats;
	const double *times = s->all_times + (size_t)ei * iterations * PHASES;
	const double *cpu_times = s->all_cpu + (size_t)ei * iterations * PHASES;
	/* The quota is in force only where the ranks ran no faster than it allows (up to the 1 ms
	 * of a period Linux may carry over): a run of these ranks outside the testbed's cgroups is
	 * timed by the wall clock, as elsewhere. */
	double cpu_sum = 0, wall_sum = 0;
	for (int k = o->warmup * PHASES; k < iterations * PHASES; k++) {
		cpu_sum += cpu_times[k];
		wall_sum += times[k];
	}
	st->cpu_per_wall = wall_sum > 0 ? cpu_sum / wall_sum : 0;
	st->cpu_basis = cpu_basis && st->cpu_per_wall < 1.5 * o->cpu_quota_cores;
	for (int p = 0; p < PHASES; p++) {
		median_of_repeats(times, o->warmup, o->repeats, p, s->col, &st->wall_med[p],
				  &st->wall_spread[p]);
		if (st->cpu_basis) {
			median_of_repeats(cpu_times, o->warmup, o->repeats, p, s->col, &st->med[p],
					  &st->spread[p]);
			st->med[p] /= o->cpu_quota_cores;
		} else {
			st->med[p] = st->wall_med[p];
			st->spread[p] = st->wall_spread[p];
		}
	}
	/* the SOSP'25 convention: the step of embedding + 2 blocks + head */
	st->update = st->med[U_EMB] + 2 * st->med[U_BLK] + st->med[U_HEAD];
}

/* The profile's layers of one entry: "<layer>": [forward_s, backward_s, update_s] for the L
 * layers, every block with the one block's times. */
static json_t *entry_layers_json(const struct entry_stats *st, int L)
{
	const double *med = st->med;
	json_t *layers = json_object();
	for (int l = 0; l < L; l++) {
		double f = l == 0 ? med[F_EMB] : (l == L - 1 ? med[F_HEAD] : med[F_BLK]);
		double bw = l == 0 ? med[B_EMB] : (l == L - 1 ? med[B_HEAD] : med[B_BLK]);
		char lk[16];
		snprintf(lk, sizeof(lk), "%d", l);
		json_object_set_new(layers, lk, json_pack("[f, f, f]", f, bw, st->update));
	}
	return layers;
}

/* Entry ei's provenance, source.entries["mbs <mbs> tp <tp>"]: every phase's median and spread,
 * the time basis, calls per sample, memory, how busy the machine was, what it ran with. */
static json_t *entry_source_json(const struct sl_profiler_options *o, const struct samples *s,
				 int ei, const struct entry_stats *st, int cpu_basis,
				 const char *date)
{
	const struct job *j = &s->jobs[ei];
	double busy_cores = s->entry_busy[ei] / fmax(s->entry_wall[ei], 1e-9);
	json_t *e = json_object(), *sp = json_object(), *md = json_object();
	for (int p = 0; p < PHASES; p++) {
		json_object_set_new(sp, phase_names[p], json_real(st->spread[p]));
		json_object_set_new(md, phase_names[p], json_real(st->med[p]));
	}
	double params = (double)(j->layer_param_bytes[0] + 2 * j->layer_param_bytes[1] +
				 j->layer_param_bytes[2]) / 16.0; /* 4 arrays of floats */
	json_object_set_new(e, "median_s", md);
	if (cpu_basis) {
		json_object_set_new(e, "time_basis",
				    json_string(st->cpu_basis ? "cpu / quota cores"
							      : "wall: the ranks ran faster than the "
								"quota allows, so it was not in force"));
		json_object_set_new(e, "cpu_per_wall", json_real(st->cpu_per_wall));
		json_t *wm = json_object(), *ws = json_object();
		for (int p = 0; p < PHASES; p++) {
			json_object_set_new(wm, phase_names[p], json_real(st->wall_med[p]));
			json_object_set_new(ws, phase_names[p], json_real(st->wall_spread[p]));
		}
		json_object_set_new(e, "median_wall_s", wm);
		json_object_set_new(e, "spread_wall", ws);
	}
	json_t *calls = json_object();
	for (int p = 0; p < PHASES; p++)
		json_object_set_new(calls, phase_names[p], json_integer(j->calls[p]));
	json_object_set_new(e, "calls_per_sample", calls);
	json_object_set_new(e, "spread", sp);
	json_object_set_new(e, "update_s_per_param",
			    json_real(params > 0 ? st->update / params : 0));
	json_t *mem = json_pack("{s:o, s:o, s:o, s:I, s:f, s:f, s:b}", "embedding",
				layer_memory(j, 0), "block", layer_memory(j, 1), "head",
				layer_memory(j, 2), "workspace_bytes", (json_int_t)j->workspace_bytes,
				"rss_bytes", j->rss_bytes, "runtime_rss_bytes", j->runtime_rss_bytes,
				"mpi_ranks", o->comm != NULL);
	json_object_set_new(e, "memory", mem);
	json_object_set_new(e, "wall_s", json_real(s->entry_wall[ei]));
	/* the ranks' own share is at most tp x the quota (or tp x threads) */
	json_object_set_new(e, "machine_busy_cores", json_real(busy_cores));
	/* entries of several runs may share a file (sl_profiler_write merges): each keeps what it
	 * was measured with */
	json_object_set_new(e, "date", json_string(date));
	json_object_set_new(e, "threads_per_rank", json_integer(o->threads));
	if (o->command)
		json_object_set_new(e, "command", json_string(o->command));
	return e;
}

/* Every entry into the profile: root["<mbs>"]["<tp>"] its layers, entries_src its provenance;
 * with verbose, a line per entry on stderr. */
static void add_entries(json_t *root, json_t *entries_src, const struct sl_profiler_options *o,
			const struct sl_model_config *model, const struct samples *s, int cpu_basis,
			const char *date)
{
	int L = model->num_blocks + 2;
	for (int a = 0; a < o->mbs_count; a++) {
		char mk[16];
		snprintf(mk, sizeof(mk), "%d", o->mbs[a]);
		json_t *by_tp = json_object();
		json_object_set_new(root, mk, by_tp);
		for (int b = 0; b < o->tp_count; b++) {
			int ei = a * o->tp_count + b;
			struct entry_stats st;
			entry_stats(o, s, ei, cpu_basis, &st);
			char tk[16], ek[32];
			snprintf(tk, sizeof(tk), "%d", o->tp[b]);
			json_object_set_new(by_tp, tk, entry_layers_json(&st, L));
			snprintf(ek, sizeof(ek), "mbs %d tp %d", o->mbs[a], o->tp[b]);
			json_object_set_new(entries_src, ek,
					    entry_source_json(o, s, ei, &st, cpu_basis, date));
			if (o->verbose)
				fprintf(stderr, "profile: %s mbs %d tp %d: block forward %.3f ms, "
					"backward %.3f ms, update %.3f ms (%.1f s)\n", model->name,
					o->mbs[a], o->tp[b], 1e3 * st.med[F_BLK], 1e3 * st.med[B_BLK],
					1e3 * st.update, s->entry_wall[ei]);
		}
	}
}

/* A rank on a CPU quota waits asleep, but each test and wake-up costs CPU its budget pays for:
 * measure it here, on the device, for the simulator (time_replay.c). */
static int add_idle_wait(json_t *src, const struct sl_profiler_options *o, struct sl_err *err)
{
	struct sl_comm_idle_cost cost;
	int rc = sl_comm_idle_wait_probe(o->comm, fmax(o->min_sample_s, 0.2), &cost, err);
	if (!rc)
		json_object_set_new(
			src, "idle_wait",
			json_pack("{s:s, s:f, s:f, s:I}", "statistic",
				  "a receive nothing matches, waited on asleep (comm.h) at the longest "
				  "sleep: process CPU and time past the sleep, per test",
				  "cpu_per_test_s", cost.cpu_per_test_s, "late_per_test_s",
				  cost.late_per_test_s, "tests", (json_int_t)cost.tests));
	return rc;
}

int sl_profiler_run(const struct sl_profiler_options *o, json_t **out, struct sl_err *err)
{
	*out = NULL;
	struct sl_model_config model;
	int rc = sl_model_config_load(o->model, &model, err);
	if (rc)
		return rc;
	int seq = o->seq_len > 0 ? o->seq_len : model.seq_len;
	if ((rc = check_options(o, &model, seq, err)))
		return rc;
	char host[256] = "unknown", date[32];
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = 0;
	iso_date(date, sizeof(date));
	json_t *root = json_object(), *entries_src = json_object();
	json_object_set_new(root, "schema", json_string(SL_PROFILE_SCHEMA));
	/* On a device that is a CPU quota, a phase's wall time also depends on where its sample
	 * ends in the quota's periods (up to (1 - cores) x period). The CPU a rank spends is what
	 * the quota's budget pays for, and the replay model replays profile times as that CPU at
	 * the quota's rate (sim/replay_cpu_quota.c): so there the time kept is the rank's CPU
	 * time / cores. Measured on the testbed (docs/design/testbed.md) the two agree within 1-3%;
	 * neither repeats within 2% between bring-ups, for reasons the sample's end is not. */
	int cpu_basis = o->cpu_quota_cores > 0 && o->cpu_quota_cores < 1 && o->threads == 1;
	json_t *src = source_json(o, &model, seq, host, date, cpu_basis);
	struct samples s = {0};
	rc = samples_alloc(&s, o, err);
	if (!rc)
		rc = run_passes(o, &model, seq, &s, err);
	if (!rc)
		add_entries(root, entries_src, o, &model, &s, cpu_basis, date);
	if (!rc && o->comm && o->comm->idle_wait == SL_COMM_WAIT_SLEEP && o->comm->rank == 0)
		rc = add_idle_wait(src, o, err);
	samples_free(&s);
	json_object_set_new(src, "entries", entries_src);
	json_object_set_new(root, "source", src);
	if (rc) {
		json_decref(root);
		return rc;
	}
	*out = root;
	return 0;
}

/* Creates path and every missing folder above it (as mkdir -p): -o may name a new tree. */
static int make_dir(const char *path, struct sl_err *err)
{
	char part[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(part))
		return sl_err_set(err, SL_EINPUT, "output folder name too long: '%s'", path);
	memcpy(part, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (part[i] != '/' && part[i] != '\0')
			continue;
		char end = part[i];
		part[i] = '\0';
		if (mkdir(part, 0777) != 0 && errno != EEXIST)
			return sl_err_set(err, SL_EIO, "cannot create folder '%s': %s", part,
					  strerror(errno));
		part[i] = end;
	}
	return 0;
}

/* Copies into profile the (mbs, tp) entries of the profile already at path that profile lacks,
 * with their provenance, so that a device type can be profiled one TP degree at a time (each in
 * the CPU share of that many devices: scripts/testbed exec --devices N). A file that is not a
 * sailor profile is refused rather than overwritten. */
static int merge_existing(json_t *profile, const char *path, struct sl_err *err)
{
	if (access(path, F_OK) != 0)
		return 0;
	json_error_t jerr;
	json_t *old = json_load_file(path, 0, &jerr);
	const char *schema = old ? json_string_value(json_object_get(old, "schema")) : NULL;
	if (!old || !schema || strcmp(schema, SL_PROFILE_SCHEMA)) {
		json_decref(old);
		return sl_err_set(err, SL_EINPUT, "'%s' exists and is not a %s file written by "
				  "`sailor profile`: move it away or choose another -o", path,
				  SL_PROFILE_SCHEMA);
	}
	const char *key;
	json_t *by_tp;
	json_object_foreach(old, key, by_tp) {
		if (!strcmp(key, "schema") || !strcmp(key, "source") || !json_is_object(by_tp))
			continue;
		json_t *mine = json_object_get(profile, key);
		if (!mine) {
			mine = json_object();
			json_object_set_new(profile, key, mine);
		}
		const char *tk;
		json_t *layers;
		json_object_foreach(by_tp, tk, layers) {
			if (json_object_get(mine, tk))
				continue;
			json_object_set(mine, tk, layers);
			char ek[64];
			snprintf(ek, sizeof(ek), "mbs %s tp %s", key, tk);
			json_t *e = json_object_get(json_object_get(json_object_get(old, "source"),
								    "entries"), ek);
			json_t *entries = json_object_get(json_object_get(profile, "source"), "entries");
			if (e && entries)
				json_object_set(entries, ek, e);
		}
	}
	json_decref(old);
	return 0;
}

int sl_profiler_write(json_t *profile, const char *dir, const char *model,
		      const char *gpu, char *path_out, size_t path_size, struct sl_err *err)
{
	char sub[4096], path[4200];
	if (snprintf(sub, sizeof(sub), "%s/%s", dir, model) >= (int)sizeof(sub))
		return sl_err_set(err, SL_EINPUT, "-o '%s': path too long", dir);
	int rc = make_dir(dir, err);
	if (!rc)
		rc = make_dir(sub, err);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/%s.json", sub, gpu);
	rc = merge_existing(profile, path, err);
	if (rc)
		return rc;
	/* temporary file, fsync, rename (util/atomic_file): never half a profile */
	struct sl_atomic_file af;
	rc = sl_atomic_open(&af, path, "profile", err);
	if (rc)
		return rc;
	if (sl_json_print(af.f, profile)) {
		sl_atomic_abort(&af);
		return sl_err_set(err, SL_EIO, "cannot write profile '%s'", path);
	}
	rc = sl_atomic_commit(&af, err);
	if (rc)
		return rc;
	if (path_out)
		snprintf(path_out, path_size, "%s", path);
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return x < y ? -1 : x > y;
}

int sl_profiler_parse_list(const char *text, int min, int max, int *out, int max_count,
			   int *count, struct sl_err *err)
{
	*count = 0;
	const char *p = text;
	while (*p) {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (end == p || errno || v < min || v > max || (*end && *end != ','))
			return sl_err_set(err, SL_EUSAGE, "'%s': expected comma-separated whole "
					  "numbers from %d to %d, e.g. 1,2,4", text, min, max);
		for (int i = 0; i < *count; i++)
			if (out[i] == (int)v)
				return sl_err_set(err, SL_EUSAGE, "'%s': %ld is listed twice", text, v);
		if (*count == max_count)
			return sl_err_set(err, SL_EUSAGE, "'%s': at most %d values", text, max_count);
		out[(*count)++] = (int)v;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return sl_err_set(err, SL_EUSAGE, "'%s': ends with a comma", text);
	}
	if (*count == 0)
		return sl_err_set(err, SL_EUSAGE, "'%s': expected at least one number", text);
	qsort(out, (size_t)*count, sizeof(int), cmp_int);
	return 0;
}
