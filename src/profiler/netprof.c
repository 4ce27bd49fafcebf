/* The network profiler (see netprof.h): placement, the measurement loop on the ranks, the
 * quadratic fit and the network file.
 * Invariants: the pair list is a function of the cluster file only, so every rank walks the same
 * pairs and sizes in the same order and the collectives (barriers, splits) pair up. */
#include "profiler/netprof.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/launch.h"
#include "runtime/launch_run.h"
#include "plan/roles.h"
#include "util/atomic_file.h"
#include "util/json.h"
#include "util/clock.h"

#define TAG_DATA 7101
#define TAG_ACK 7102
#define TAG_RESULT 7103

int sl_netprof_layout(const struct sl_cluster *cluster, struct sl_netprof_layout *out,
		      struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	for (int h = 0; h < cluster->host_count; h++) {
		if (cluster->hosts[h].slots < 2)
			continue;
		int known = 0;
		for (int i = 0; i < out->intra_count; i++)
			known |= cluster->hosts[out->intra_hosts[i]].gpu == cluster->hosts[h].gpu;
		if (!known)
			out->intra_hosts[out->intra_count++] = h;
	}
	out->world = cluster->host_count + out->intra_count;
	if (out->world < 2)
		return sl_err_set(err, SL_EINPUT, "cluster file '%s': one host with one slot: nothing "
				  "to measure (give two hosts, or a host with two slots)",
				  cluster->path);
	out->rank_host = calloc((size_t)out->world, sizeof(int));
	if (!out->rank_host)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	for (int h = 0; h < cluster->host_count; h++)
		out->rank_host[h] = h;
	for (int i = 0; i < out->intra_count; i++)
		out->rank_host[cluster->host_count + i] = out->intra_hosts[i];
	return 0;
}

void sl_netprof_layout_free(struct sl_netprof_layout *layout)
{
	free(layout->rank_host);
	layout->rank_host = NULL;
}

/* --- the fit ------------------------------------------------------------------------------- */

/* Solves the k x k system a x = b (k <= 3) by Gaussian elimination with partial pivoting;
 * returns -1 when singular. */
static int solve(double a[3][3], double b[3], int k, double x[3])
{
	for (int c = 0; c < k; c++) {
		int p = c;
		for (int r = c + 1; r < k; r++)
			if (fabs(a[r][c]) > fabs(a[p][c]))
				p = r;
		if (fabs(a[p][c]) < 1e-12)
			return -1;
		for (int j = 0; j < k; j++) {
			double t = a[c][j];
			a[c][j] = a[p][j];
			a[p][j] = t;
		}
		double t = b[c];
		b[c] = b[p];
		b[p] = t;
		for (int r = c + 1; r < k; r++) {
			double f = a[r][c] / a[c][c];
			for (int j = c; j < k; j++)
				a[r][j] -= f * a[c][j];
			b[r] -= f * b[c];
		}
	}
	for (int c = k - 1; c >= 0; c--) {
		double s = b[c];
		for (int j = c + 1; j < k; j++)
			s -= a[c][j] * x[j];
		x[c] = s / a[c][c];
	}
	return 0;
}

int sl_netprof_fit(const double *bytes, const double *bandwidth_bps, int n, struct sl_link_fit *out)
{
	memset(out, 0, sizeof(*out));
	if (n < 1)
		return SL_EINPUT;
	int distinct = 0;
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int j = 0; j < i; j++)
			seen |= bytes[j] == bytes[i];
		distinct += !seen;
		if (bandwidth_bps[i] > out->max_bps)
			out->max_bps = bandwidth_bps[i];
	}
	/* normal equations of y = sum c_d x^d, d < k, with k = min(3, distinct sizes) */
	int k = distinct < 3 ? distinct : 3;
	double c[3] = {0, 0, 0};
	while (k >= 1) {
		double a[3][3] = {{0}}, b[3] = {0};
		for (int i = 0; i < n; i++) {
			double x = log2(bytes[i] / 1e6), y = bandwidth_bps[i] / 1e9, p[5];
			p[0] = 1;
			for (int d = 1; d < 5; d++)
				p[d] = p[d - 1] * x;
			for (int r = 0; r < k; r++) {
				for (int s = 0; s < k; s++)
					a[r][s] += p[r + s];
				b[r] += p[r] * y;
			}
		}
		if (solve(a, b, k, c) == 0)
			break;
		k--;
	}
	out->a0 = c[0];
	out->a1 = k >= 2 ? c[1] : 0;
	out->a2 = k >= 3 ? c[2] : 0;
	out->derived = 0;
	return 0;
}

/* --- pairs --------------------------------------------------------------------------------- */

struct pair {
	int a, b;        /* ranks: a sends */
	int within_host;
};

/* The measured pairs (see netprof.h); returns their number, pairs has room for world^2. */
static int build_pairs(const struct sl_cluster *c, const struct sl_netprof_layout *lay,
		       struct pair *pairs)
{
	int first[SL_CLUSTER_MAX_HOSTS];
	int second[SL_CLUSTER_MAX_HOSTS];
	int ne = 0, np = 0;
	for (int h = 0; h < c->host_count; h++) {
		int e = 0;
		while (e < ne && !(c->hosts[first[e]].zone == c->hosts[h].zone &&
				   c->hosts[first[e]].gpu == c->hosts[h].gpu))
			e++;
		if (e == ne) {
			first[ne] = h;
			second[ne++] = -1;
		} else if (second[e] < 0) {
			second[e] = h;
		}
	}
	for (int e = 0; e < ne; e++) {
		if (second[e] >= 0)
			pairs[np++] = (struct pair){first[e], second[e], 0};
		for (int f = e + 1; f < ne; f++)
			pairs[np++] = (struct pair){first[e], first[f], 0};
	}
	for (int i = 0; i < lay->intra_count; i++)
		pairs[np++] = (struct pair){lay->intra_hosts[i], c->host_count + i, 1};
	return np;
}

/* --- the worker ---------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int send_wait(struct sl_comm *c, const void *buf, long long n, enum sl_comm_dtype t,
		     int peer, int tag, struct sl_err *err)
{
	struct sl_comm_request r = {0};
	int rc = sl_comm_isend(c, buf, n, t, peer, tag, &r, err);
	return rc ? rc : sl_comm_wait(c, &r, err);
}

static int recv_wait(struct sl_comm *c, void *buf, long long n, enum sl_comm_dtype t, int peer,
		     int tag, struct sl_err *err)
{
	struct sl_comm_request r = {0};
	int rc = sl_comm_irecv(c, buf, n, t, peer, tag, &r, err);
	return rc ? rc : sl_comm_wait(c, &r, err);
}

/* The burst probe: a link that idled delivers some bytes at once (a token bucket: the testbed's
 * tc burst, a cloud NIC's credits; on a device that is a CPU quota, also the budget a sender
 * saved while idle). A message of the probe's size sent after BURST_IDLE_S of quiet, against
 * the same message sent back to back, shows how many. */
#define BURST_IDLE_S 0.25
#define BURST_PROBE_BYTES 262144

/* The eager probe: OpenMPI sends a message of up to its TCP eager limit (64 KiB with its header)
 * in one write, which TCP hands to the device as one segment; a shaper that lets a packet through
 * whenever its bucket is not in debt (htb) then passes the whole message at once after quiet,
 * however small its burst. The probe's message is the largest that stays one segment with
 * OpenMPI's and TCP's headers (TCP's segments on a veth hold 45 x 1448 = 65160 bytes), so that
 * whole_message_bytes covers the eager messages a run sends (a micro-batch's activations just
 * over 48 KiB, say) rather than stopping at a smaller probe. A message of EAGER_PROBE_BYTES
 * after BURST_IDLE_S of quiet, timed against a one-byte round trip just before it: the bytes it
 * moved faster than the link's back-to-back rate allows. The fastest of EAGER_PROBE_REPEATS of
 * each counts: a device that is a CPU quota can only delay an answer, never speed the wire. */
#define EAGER_PROBE_BYTES 61440
#define EAGER_PROBE_REPEATS 7

/* The size index the burst probe sends: the largest size up to BURST_PROBE_BYTES, else the
 * smallest. */
static int burst_size_index(const struct sl_netprof_options *o)
{
	int best = 0;
	for (int s = 0; s < o->size_count; s++)
		if (o->sizes[s] <= BURST_PROBE_BYTES && o->sizes[s] > o->sizes[best])
			best = s;
	return best;
}

/* The message probe's figures follow the time probes' in results: RESULT_MESSAGE_CPU(o) + 2s
 * the sender's CPU per message of size s, + 2s + 1 the receiver's (-1: not measured). */
#define RESULT_MESSAGE_CPU(o) (2 * (o)->size_count + 3)
#define RESULT_COUNT(o) (4 * (o)->size_count + 3)

/* The quiet before a probe's message: BURST_IDLE_S in which the link carries nothing. */
static void let_link_idle(void)
{
	struct timespec quiet = {0, (long)(BURST_IDLE_S * 1e9)};
	nanosleep(&quiet, NULL);
}

/* A message of n bytes from p->a to p->b and its one-byte answer, on whichever end this is. */
static int message_and_answer(struct sl_comm *c, const struct pair *p, char *buf, long long n,
			      struct sl_err *err)
{
	char ack = 1;
	int rc;
	if (c->rank == p->a) {
		rc = send_wait(c, buf, n, SL_COMM_BYTE, p->b, TAG_DATA, err);
		if (!rc)
			rc = recv_wait(c, &ack, 1, SL_COMM_BYTE, p->b, TAG_ACK, err);
	} else {
		rc = recv_wait(c, buf, n, SL_COMM_BYTE, p->a, TAG_DATA, err);
		if (!rc)
			rc = send_wait(c, &ack, 1, SL_COMM_BYTE, p->a, TAG_ACK, err);
	}
	return rc;
}

/* The rounds of one kind of sample (0: point-to-point, 1: all-reduce over g) of n bytes: round
 * 0 untimed, counting the operations of a sample, then the repeats timed; t[r] gets round r's
 * seconds per operation, msg_cpu[r] its CPU inside MPI calls per operation, less its tests'
 * cost when they find nothing (measure_pair). */
static int time_rounds(const struct sl_netprof_options *o, struct sl_comm *c,
		       struct sl_comm_group *g, const struct pair *p, char *buf, long long n,
		       int kind, double empty_test_cpu_s, double *t, double *msg_cpu,
		       struct sl_err *err)
{
	int me = c->rank, calls = 1, rc = 0;
	for (int r = 0; r <= o->repeats && !rc; r++) {
		int counting = r == 0;
		if (kind == 1)
			rc = sl_comm_barrier(c, g, err);
		double t0 = sl_now_s(), call0 = c->call_cpu_s;
		long tests0 = c->sleeping_tests;
		int done = 0;
		for (; !rc && (counting || done < calls); done++) {
			if (kind == 1)
				rc = sl_comm_allreduce(c, g, buf, n / 4 > 0 ? n / 4 : 1, SL_COMM_FLOAT,
						       SL_COMM_SUM, err);
			else
				rc = message_and_answer(c, p, buf, n, err);
			if (counting && !rc) {
				double more = me == p->a && done + 1 < 1000 &&
					      sl_now_s() - t0 < o->min_sample_s;
				rc = sl_comm_allreduce(c, g, &more, 1, SL_COMM_DOUBLE, SL_COMM_MAX, err);
				if (!rc && more == 0) {
					calls = done + 1;
					counting = 0;
				}
			}
		}
		t[r] = (sl_now_s() - t0) / (done > 0 ? done : 1);
		msg_cpu[r] = (c->call_cpu_s - call0 -
			      (double)(c->sleeping_tests - tests0) * empty_test_cpu_s) /
			     (done > 0 ? done : 1);
	}
	return rc;
}

/* Every size's samples, from a barrier of the whole job (in: this rank is one of the pair's):
 * results[2s] and [2s + 1] the point-to-point and all-reduce medians, on rank a, and each end's
 * CPU per message (RESULT_MESSAGE_CPU). t and msg_cpu are scratch of repeats + 2. */
static int measure_sizes(const struct sl_netprof_options *o, struct sl_comm *c,
			 struct sl_comm_group *g, const struct pair *p, int in, char *buf,
			 double empty_test_cpu_s, double *t, double *msg_cpu, double *results,
			 struct sl_err *err)
{
	int me = c->rank, rc = 0;
	for (int s = 0; s < o->size_count && !rc; s++) {
		long long n = o->sizes[s];
		rc = sl_comm_barrier(c, &c->world, err);
		/* Point-to-point, then all-reduce. Round 0 is untimed (connection set-up) and counts
		 * how many operations a timed sample makes: it repeats them until min_sample_s has
		 * passed on rank a, which tells b after each one. A sample of one message would
		 * catch a device that is a CPU quota either inside a burst or across a whole
		 * throttled gap; a sample of many shows its average. */
		for (int kind = 0; kind < 2 && !rc && in; kind++) {
			rc = time_rounds(o, c, g, p, buf, n, kind, empty_test_cpu_s, t, msg_cpu, err);
			if (!rc && me == p->a)
				results[2 * s + kind] = median(t + 1, o->repeats);
			if (kind == 0 && !rc) { /* each end's CPU per message goes to rank a */
				double mine[2] = {0, 0};
				mine[me == p->a ? 0 : 1] =
					empty_test_cpu_s < 0 ? -1 : fmax(0, median(msg_cpu + 1, o->repeats));
				rc = sl_comm_allreduce(c, g, mine, 2, SL_COMM_DOUBLE, SL_COMM_SUM, err);
				if (!rc && me == p->a) {
					results[RESULT_MESSAGE_CPU(o) + 2 * s] = mine[0];
					results[RESULT_MESSAGE_CPU(o) + 2 * s + 1] = mine[1];
				}
			}
		}
	}
	return rc;
}

/* The burst probe, between hosts: one message after quiet, as often as the repeats;
 * results[2 x sizes] its median round trip, on rank a (0 within a host). */
static int burst_probe(const struct sl_netprof_options *o, struct sl_comm *c,
		       struct sl_comm_group *g, const struct pair *p, int in, char *buf, double *t,
		       double *results, struct sl_err *err)
{
	int me = c->rank, rc = 0;
	long long nb = o->sizes[burst_size_index(o)];
	for (int r = 0; r < o->repeats && !rc && in && !p->within_host; r++) {
		rc = sl_comm_barrier(c, g, err);
		if (!rc && me == p->a) {
			let_link_idle();
			double t0 = sl_now_s();
			rc = message_and_answer(c, p, buf, nb, err);
			t[r] = sl_now_s() - t0;
		} else if (!rc) {
			rc = message_and_answer(c, p, buf, nb, err);
		}
	}
	if (!rc && me == p->a)
		results[2 * o->size_count] = p->within_host ? 0 : median(t, o->repeats);
	return rc;
}

/* The eager probe, between hosts: after quiet, a one-byte round trip, then the message's;
 * results[2 x sizes + 1] and [+ 2] the fastest of each, on rank a (0 within a host). */
static int eager_probe(const struct sl_netprof_options *o, struct sl_comm *c,
		       struct sl_comm_group *g, const struct pair *p, int in, char *buf, double *t,
		       double *results, struct sl_err *err)
{
	int me = c->rank, rc = 0;
	double best = HUGE_VAL, best_small = HUGE_VAL;
	for (int r = 0; r < EAGER_PROBE_REPEATS && !rc && in && !p->within_host; r++) {
		rc = sl_comm_barrier(c, g, err);
		for (int k = 0; k < 2 && !rc; k++) {
			long long n = k ? EAGER_PROBE_BYTES : 1;
			if (me == p->a) {
				if (k == 0)
					let_link_idle();
				double t0 = sl_now_s();
				rc = message_and_answer(c, p, buf, n, err);
				t[k] = sl_now_s() - t0;
			} else {
				rc = message_and_answer(c, p, buf, n, err);
			}
		}
		if (!rc && me == p->a) {
			best = fmin(best, t[1]);
			best_small = fmin(best_small, t[0]);
		}
	}
	if (!rc && me == p->a) {
		results[2 * o->size_count + 1] = p->within_host ? 0 : best;
		results[2 * o->size_count + 2] = p->within_host ? 0 : best_small;
	}
	return rc;
}

/* Measures one pair: on rank a, results[size][0] = p2p median seconds, [1] = all-reduce, and
 * results[2 x sizes] = the burst probe's median round trip after idling (between hosts), then
 * the eager probe's, then the message probe's (RESULT_MESSAGE_CPU).
 * The message probe: what moving a message costs each end in CPU, apart from the sleeps and
 * wake-ups between its tests (which the device profile's idle_wait measures): the thread CPU
 * inside the MPI calls of the point-to-point samples (comm.h, count_call_cpu) less what their
 * tests would have cost finding nothing (empty_test_cpu_s, this rank's; < 0: the rank polls,
 * where that CPU is all the wait and says nothing), per message and its one-byte answer, median
 * over the repeats. */
static int measure_pair(const struct sl_netprof_options *o, struct sl_comm *c,
			const struct pair *p, char *buf, double empty_test_cpu_s, double *results,
			struct sl_err *err)
{
	int me = c->rank, in = me == p->a || me == p->b;
	struct sl_comm_group g;
	memset(&g, 0, sizeof(g));
	int rc = sl_comm_split(c, in ? 0 : SL_COMM_NO_GROUP, me == p->a ? 0 : 1, &g, err);
	double *t = malloc((size_t)(o->repeats + 2) * sizeof(double));
	double *msg_cpu = malloc((size_t)(o->repeats + 2) * sizeof(double));
	if (!rc && (!t || !msg_cpu))
		rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	if (!rc)
		rc = measure_sizes(o, c, &g, p, in, buf, empty_test_cpu_s, t, msg_cpu, results, err);
	if (!rc)
		rc = burst_probe(o, c, &g, p, in, buf, t, results, err);
	if (!rc)
		rc = eager_probe(o, c, &g, p, in, buf, t, results, err);
	free(t);
	free(msg_cpu);
	if (in)
		sl_comm_group_free(c, &g);
	return rc;
}

static json_t *fit_json(const struct sl_link_fit *f)
{
	return json_pack("[[f, f, f], f]", f->a2, f->a1, f->a0, f->max_bps);
}

/* Sets root[z1][g1]["1"][z2][g2]["1"] = fit. */
static void put_link(json_t *root, const char *z1, const char *g1, const char *z2,
		     const char *g2, const struct sl_link_fit *f)
{
	const char *keys[5] = {z1, g1, "1", z2, g2};
	json_t *o = root;
	for (int i = 0; i < 5; i++) {
		json_t *next = json_object_get(o, keys[i]);
		if (!next) {
			next = json_object();
			json_object_set_new(o, keys[i], next);
		}
		o = next;
	}
	json_object_set_new(o, "1", fit_json(f));
}

/* Through util/atomic_file (temporary file, fsync, rename, folder fsync): a crash or a full
 * disk leaves the previous fits or nothing, never a part. */
static int write_atomically(const char *path, const json_t *v, struct sl_err *err)
{
	struct sl_atomic_file af;
	int rc = sl_atomic_open(&af, path, "network fits", err);
	if (rc)
		return rc;
	if (sl_json_print(af.f, v)) {
		sl_atomic_abort(&af);
		return sl_err_set(err, SL_EIO, "cannot write network fits '%s'", path);
	}
	return sl_atomic_commit(&af, err);
}

/* The message probe (measure_pair) on a rank that waits asleep: what its tests cost when they
 * find nothing, then the CPU inside its MPI calls from here on. One rank at a time, as the
 * pairs are measured: ranks probing at once on shared cores cost each other. */
static int probe_empty_tests(struct sl_comm *comm, double *empty_test_cpu_s, struct sl_err *err)
{
	int rc = 0;
	for (int r = 0; !rc && r < comm->size; r++) {
		rc = sl_comm_barrier(comm, &comm->world, err);
		if (rc || r != comm->rank || comm->idle_wait != SL_COMM_WAIT_SLEEP)
			continue;
		struct sl_comm_idle_cost cost;
		rc = sl_comm_idle_wait_probe(comm, 0.2, &cost, err);
		*empty_test_cpu_s = cost.call_cpu_per_test_s;
		comm->count_call_cpu = 1;
	}
	return rc;
}

/* Rank 0: the message probe's figures of a pair (source.pairs[].message_cpu), where both ends
 * measured them (ranks that wait asleep); jb is the pair's sizes. */
static void add_message_cpu(json_t *pr, const struct sl_netprof_options *o,
			    const double *results, json_t *jb)
{
	int cpu_measured = 1;
	for (int k = 0; k < 2 * o->size_count; k++)
		cpu_measured &= results[RESULT_MESSAGE_CPU(o) + k] >= 0;
	if (!cpu_measured)
		return;
	json_t *snd = json_array(), *rcv = json_array();
	for (int sz = 0; sz < o->size_count; sz++) {
		json_array_append_new(snd, json_real(results[RESULT_MESSAGE_CPU(o) + 2 * sz]));
		json_array_append_new(rcv, json_real(results[RESULT_MESSAGE_CPU(o) + 2 * sz + 1]));
	}
	json_object_set_new(pr, "message_cpu",
			    json_pack("{s:O, s:o, s:o}", "bytes", jb, "sender_s", snd,
				      "receiver_s", rcv));
}

/* Rank 0: what the burst and eager probes of a pair between hosts say about its link
 * (source.pairs[]: burst_bytes, whole_message_bytes and the probes' raw figures). */
static void add_link_probes(json_t *pr, const struct sl_netprof_options *o, const double *results)
{
	/* bytes the link let through at once after quiet: what the message saved against its
	 * back-to-back time, at the back-to-back rate */
	int sb = burst_size_index(o);
	double sustained = results[2 * sb], after_idle = results[2 * o->size_count];
	double burst = sustained > 0 && after_idle > 0
			       ? fmax(0, 1 - after_idle / sustained) * o->sizes[sb]
			       : 0;
	json_object_set_new(pr, "burst_bytes", json_real(burst));
	/* the eager probe's message moved at once what it beat the rate by */
	double eager_rt = results[2 * o->size_count + 1];
	double small_rt = results[2 * o->size_count + 2];
	if (!isfinite(eager_rt) || !isfinite(small_rt))
		eager_rt = small_rt = 0; /* not measured: whole stays 0 */
	double extra = fmax(0, eager_rt - small_rt);
	double whole = sustained > 0 && eager_rt > 0
			       ? EAGER_PROBE_BYTES - extra * o->sizes[sb] / sustained
			       : 0;
	whole = fmin(EAGER_PROBE_BYTES, fmax(0, whole));
	json_object_set_new(pr, "whole_message_bytes", json_real(whole));
	json_object_set_new(pr, "eager_probe",
			    json_pack("{s:I, s:f, s:I, s:f, s:f}", "bytes",
				      (json_int_t)EAGER_PROBE_BYTES, "idle_s", BURST_IDLE_S,
				      "repeats", (json_int_t)EAGER_PROBE_REPEATS, "round_trip_s",
				      eager_rt, "one_byte_round_trip_s", small_rt));
	json_object_set_new(pr, "burst_probe",
			    json_pack("{s:I, s:f, s:f, s:f}", "bytes", (json_int_t)o->sizes[sb],
				      "idle_s", BURST_IDLE_S, "after_idle_s", after_idle,
				      "back_to_back_s", sustained));
}

/* Rank 0: a pair's record in source.pairs from rank a's results: its hosts, bandwidth per size
 * and their fits, and the probes' figures; *fp gets the point-to-point fit. */
static json_t *pair_record(const struct sl_netprof_options *o, const struct sl_catalogue *cat,
			   const struct sl_host *ha, const struct sl_host *hb, const struct pair *p,
			   const double *results, struct sl_link_fit *fp)
{
	double bytes[SL_NETPROF_MAX_SIZES], p2p[SL_NETPROF_MAX_SIZES], ar[SL_NETPROF_MAX_SIZES];
	json_t *jb = json_array(), *jp = json_array(), *ja = json_array();
	for (int s = 0; s < o->size_count; s++) {
		bytes[s] = (double)o->sizes[s];
		p2p[s] = results[2 * s] > 0 ? bytes[s] / results[2 * s] : 0;
		ar[s] = results[2 * s + 1] > 0 ? bytes[s] / results[2 * s + 1] : 0;
		json_array_append_new(jb, json_integer(o->sizes[s]));
		json_array_append_new(jp, json_real(p2p[s]));
		json_array_append_new(ja, json_real(ar[s]));
	}
	struct sl_link_fit fa;
	sl_netprof_fit(bytes, p2p, o->size_count, fp);
	sl_netprof_fit(bytes, ar, o->size_count, &fa);
	const char *za = cat->zones[ha->zone].name, *zb = cat->zones[hb->zone].name;
	const char *ga = cat->gpus[ha->gpu].name, *gb = cat->gpus[hb->gpu].name;
	json_t *pr = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o}",
			       "kind", p->within_host ? "within a host" : "between hosts",
			       "sender", ha->name, "receiver", hb->name, "sender_zone", za,
			       "receiver_zone", zb, "sender_gpu", ga, "receiver_gpu", gb, "bytes", jb,
			       "p2p_bps", jp, "allreduce_bps", ja, "p2p_fit", fit_json(fp),
			       "allreduce_fit", fit_json(&fa));
	add_message_cpu(pr, o, results, jb);
	if (!p->within_host)
		add_link_probes(pr, o, results);
	return pr;
}

/* Rank 0: the pair's point-to-point fit where the simulator reads it: intra_node for a pair
 * within a host, else both directions of the link between the two endpoints. */
static void put_pair_fit(json_t *root, const struct sl_catalogue *cat, const struct sl_host *ha,
			 const struct sl_host *hb, const struct pair *p, const struct sl_link_fit *fp)
{
	const char *za = cat->zones[ha->zone].name, *zb = cat->zones[hb->zone].name;
	const char *ga = cat->gpus[ha->gpu].name, *gb = cat->gpus[hb->gpu].name;
	if (p->within_host) {
		json_t *intra = json_object_get(root, "intra_node");
		if (!intra) {
			intra = json_object();
			json_object_set_new(root, "intra_node", intra);
		}
		json_object_set_new(intra, ga, json_pack("{s:o}", "2", fit_json(fp)));
	} else {
		put_link(root, za, ga, zb, gb, fp);
		put_link(root, zb, gb, za, ga, fp);
	}
}

/* Rank 0: the network file's "source", which takes over list (source.pairs); t_start: when the
 * pairs' measurement began. */
static json_t *source_json(const struct sl_netprof_options *o, json_t *list, int world,
			   double t_start)
{
	char host[256] = "unknown", date[32];
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = 0;
	time_t tt = time(NULL);
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *src = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:f, s:s, s:o}", "profiler",
				"sailor profile --network (MPI ranks on the cluster's hosts)",
				"cluster", o->cluster, "launcher_host", host, "date", date,
				"repeats", o->repeats, "ranks", world, "wall_s",
				sl_now_s() - t_start, "statistic",
				"median over repeats of samples of at least min_sample_s (the time per "
				"operation kept); p2p: bytes / round trip with a 1-byte "
				"answer; allreduce: bytes / time of a sum over the pair",
				"pairs", list);
	if (o->command)
		json_object_set_new(src, "command", json_string(o->command));
	return src;
}

int sl_netprof_worker(const struct sl_netprof_options *o, const struct sl_catalogue *cat,
		      struct sl_comm *comm, struct sl_err *err)
{
	struct sl_cluster cluster;
	struct sl_netprof_layout lay;
	memset(&lay, 0, sizeof(lay));
	int rc = sl_cluster_load(o->cluster, cat, &cluster, err);
	if (!rc)
		rc = sl_netprof_layout(&cluster, &lay, err);
	if (!rc && lay.world != comm->size)
		rc = sl_err_set(err, SL_EUSAGE, "the job has %d ranks but cluster file '%s' places %d: "
				"start 'sailor profile --network' without mpirun, it launches itself",
				comm->size, o->cluster, lay.world);
	if (!rc) /* measure the links the way a run's rank on this host waits on them */
		rc = sl_comm_set_idle_wait(
			comm,
			sl_comm_idle_wait_for(
				cat->gpus[cluster.hosts[lay.rank_host[comm->rank]].gpu].cpu_quota_cores),
			err);
	double empty_test_cpu_s = -1;
	if (!rc)
		rc = probe_empty_tests(comm, &empty_test_cpu_s, err);
	struct pair *pairs = NULL;
	char *buf = NULL;
	double *results = NULL;
	int np = 0;
	if (!rc) {
		pairs = calloc((size_t)lay.world * (size_t)lay.world + 1, sizeof(*pairs));
		/* the largest size, or the eager probe's message where the sizes are smaller */
		long long most = o->sizes[o->size_count - 1];
		buf = calloc((size_t)(most > EAGER_PROBE_BYTES ? most : EAGER_PROBE_BYTES) + 4, 1);
		results = calloc((size_t)RESULT_COUNT(o), sizeof(double));
		if (!pairs || !buf || !results)
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	if (!rc)
		np = build_pairs(&cluster, &lay, pairs);
	json_t *root = NULL, *list = NULL;
	if (!rc && comm->rank == 0) {
		root = json_object();
		list = json_array();
		json_object_set_new(root, "schema", json_string("sailor.network/1"));
	}
	double t_start = sl_now_s();
	for (int i = 0; i < np && !rc; i++) {
		const struct pair *p = &pairs[i];
		rc = measure_pair(o, comm, p, buf, empty_test_cpu_s, results, err);
		/* the sender's medians go to rank 0 */
		if (!rc && p->a != 0 && comm->rank == p->a)
			rc = send_wait(comm, results, RESULT_COUNT(o), SL_COMM_DOUBLE, 0,
				       TAG_RESULT, err);
		if (!rc && p->a != 0 && comm->rank == 0)
			rc = recv_wait(comm, results, RESULT_COUNT(o), SL_COMM_DOUBLE, p->a,
				       TAG_RESULT, err);
		if (rc || comm->rank != 0)
			continue;
		const struct sl_host *ha = &cluster.hosts[lay.rank_host[p->a]];
		const struct sl_host *hb = &cluster.hosts[lay.rank_host[p->b]];
		struct sl_link_fit fp;
		json_array_append_new(list, pair_record(o, cat, ha, hb, p, results, &fp));
		put_pair_fit(root, cat, ha, hb, p, &fp);
	}
	if (!rc && comm->rank == 0) {
		json_object_set_new(root, "source", source_json(o, list, lay.world, t_start));
		list = NULL;
		rc = write_atomically(o->output, root, err);
	}
	json_decref(list);
	json_decref(root);
	free(pairs);
	free(buf);
	free(results);
	sl_netprof_layout_free(&lay);
	sl_cluster_free(&cluster);
	return rc;
}

/* --- the launcher -------------------------------------------------------------------------- */

int sl_netprof_launch(const struct sl_netprof_options *o, const struct sl_catalogue *cat,
		      const char *const *worker_argv, struct sl_err *err)
{
	struct sl_cluster cluster;
	struct sl_netprof_layout lay;
	memset(&lay, 0, sizeof(lay));
	int rc = sl_cluster_load(o->cluster, cat, &cluster, err);
	if (rc)
		return rc;
	rc = sl_netprof_layout(&cluster, &lay, err);
	if (!rc)
		rc = sl_launch_run_on_hosts(&cluster, lay.rank_host, lay.world, o->timeout_s,
					    worker_argv, "sailor profile", err);
	if (rc == SL_ETIMEOUT)
		sl_err_set(err, SL_EIO, "the measurement took longer than %d s and was stopped: use "
			   "fewer or smaller --sizes, fewer --repeats, or a larger --timeout",
			   o->timeout_s);
	sl_netprof_layout_free(&lay);
	sl_cluster_free(&cluster);
	return rc;
}
