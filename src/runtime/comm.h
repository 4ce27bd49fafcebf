/* The communication interface of the distributed runtime: point-to-point transfers between
 * ranks and collectives on groups of ranks. The schedule, the gradient sync, the checkpoint
 * gather and the layers call only this; a backend implements it (comm_mpi.c: OpenMPI for the
 * CPU path; NCCL is meant to be a second backend behind the same table for GPUs).
 *
 * A job has `size` ranks numbered 0..size-1 (the role table's numbering, roles.h). Transfers
 * name world ranks and carry a tag; a receive matches the send of the same source and tag, in
 * order. Sends and receives are non-blocking and return a request to wait on; the buffer must
 * stay untouched until the wait returns. Collectives act on a group (struct sl_comm_group) and
 * block until every member called them; every member must call the same collectives in the same
 * order.
 *
 * Groups are made by splitting the world: every rank calls sl_comm_split() with a colour (ranks
 * of equal colour form one group, SL_COMM_NO_GROUP for ranks that join none) and a key (the
 * order inside the group). Every rank of the job must make the same splits in the same order.
 *
 * Errors: every function returns 0 or a negative SL_E* code; a backend failure is SL_EIO with
 * the backend's message in err. After a failed collective the job cannot continue; the caller
 * reports and calls abort(), which ends every rank.
 *
 * Ownership: sl_comm_mpi_init() sets up the backend and the world group; sl_comm_split() returns a
 * group the caller frees with sl_comm_group_free() before sl_comm_finalize().
 */
#ifndef SL_RUNTIME_COMM_H
#define SL_RUNTIME_COMM_H

#include <stddef.h>

#include "plan/rank_wait.h"
#include "util/err.h"

#define SL_COMM_NO_GROUP (-1)

enum sl_comm_dtype { SL_COMM_FLOAT, SL_COMM_DOUBLE, SL_COMM_INT32, SL_COMM_BYTE };
enum sl_comm_op { SL_COMM_SUM, SL_COMM_MAX };

/* Opaque room for a backend's request handle (an MPI_Request, an event). */
struct sl_comm_request {
	long long storage[2];
	int active;
};

struct sl_comm_group {
	int rank, size;          /* this rank's index in the group, members */
	void *impl;              /* backend's communicator */
};

struct sl_comm;

struct sl_comm_backend {
	const char *name;
	int (*split)(struct sl_comm *comm, int colour, int key, struct sl_comm_group *out,
		     struct sl_err *err);
	void (*group_free)(struct sl_comm *comm, struct sl_comm_group *group);
	int (*isend)(struct sl_comm *comm, const void *buf, long long count,
		     enum sl_comm_dtype dtype, int dest, int tag, struct sl_comm_request *req,
		     struct sl_err *err);
	int (*irecv)(struct sl_comm *comm, void *buf, long long count, enum sl_comm_dtype dtype,
		     int source, int tag, struct sl_comm_request *req, struct sl_err *err);
	int (*wait)(struct sl_comm *comm, struct sl_comm_request *req, struct sl_err *err);
	int (*allreduce)(struct sl_comm *comm, const struct sl_comm_group *group, void *buf,
			 long long count, enum sl_comm_dtype dtype, enum sl_comm_op op,
			 struct sl_err *err);
	/* out holds group->size * count elements: member i's `in` at i * count */
	int (*allgather)(struct sl_comm *comm, const struct sl_comm_group *group, const void *in,
			 void *out, long long count, enum sl_comm_dtype dtype, struct sl_err *err);
	/* Sums the members' `in` (each sum(counts) elements) element-wise; member i receives the
	 * counts[i] elements that start at counts[0] + ... + counts[i-1], at the start of `out`
	 * (in == out: in place, the result at the start of the buffer). */
	int (*reduce_scatter)(struct sl_comm *comm, const struct sl_comm_group *group,
			      const void *in, void *out, const int *counts,
			      enum sl_comm_dtype dtype, struct sl_err *err);
	/* In place: buf holds sum(counts) elements; member i's counts[i] elements at its
	 * displacement (the sum of the counts before it) are given to every member. */
	int (*allgatherv)(struct sl_comm *comm, const struct sl_comm_group *group, void *buf,
			  const int *counts, enum sl_comm_dtype dtype, struct sl_err *err);
	int (*broadcast)(struct sl_comm *comm, const struct sl_comm_group *group, void *buf,
			 long long count, enum sl_comm_dtype dtype, int root, struct sl_err *err);
	int (*barrier)(struct sl_comm *comm, const struct sl_comm_group *group,
		       struct sl_err *err);
	/* Non-blocking, in bytes, finished with wait or test; counts and displacements (bytes)
	 * must stay untouched until then. Member i sends send_counts[c] bytes at send_displs[c]
	 * to member c and receives recv_counts[i] bytes from member i at recv_displs[i]. */
	int (*ialltoallv)(struct sl_comm *comm, const struct sl_comm_group *group,
			  const void *send, const int *send_counts, const int *send_displs,
			  void *recv, const int *recv_counts, const int *recv_displs,
			  struct sl_comm_request *req, struct sl_err *err);
	/* *done = 1 (and the request inactive) when req has finished; never blocks. */
	int (*test)(struct sl_comm *comm, struct sl_comm_request *req, int *done,
		    struct sl_err *err);
	void (*abort)(struct sl_comm *comm, int status);
	void (*finalize)(struct sl_comm *comm);
};

/* How a rank waits for a transfer or a collective to finish. */
enum sl_comm_idle_wait {
	/* the backend's blocking call, which polls: the lowest latency where a rank owns its
	 * cores (MPI's default) */
	SL_COMM_WAIT_POLL,
	/* test, then sleep a few microseconds, and again: for a device whose compute is a CPU
	 * quota (catalogue cpu_quota), where polling would spend the budget its work needs and
	 * leave it throttled when the message comes */
	SL_COMM_WAIT_SLEEP,
};

struct sl_comm {
	const struct sl_comm_backend *backend;
	int rank, size;               /* world */
	struct sl_comm_group world;
	enum sl_comm_idle_wait idle_wait; /* this rank's; SL_COMM_WAIT_POLL unless set */
	/* Collectives run as their non-blocking forms on every rank (some rank waits asleep). A
	 * blocking and a non-blocking collective do not match (MPI-3.1 5.12), so the world agrees
	 * on this (sl_comm_set_idle_wait): ranks that poll then finish them with MPI_Wait. */
	int nonblocking_collectives;
	long sleeping_tests;          /* MPI tests its sleeping waits made so far (each test and
				       * sleep is what the simulator's sl_replay_wait_idle counts) */
	double sleeping_cpu_s;        /* the process CPU spent inside those waits so far */
	/* While count_call_cpu is set: the thread CPU spent inside the backend's calls of
	 * point-to-point posts (isend, irecv) and of sleeping waits' tests, so far. Moving a
	 * message costs a rank that CPU, apart from the sleeps and wake-ups between its tests
	 * (the network profiler's message probe, profiler/netprof.h). Unset: not counted. */
	int count_call_cpu;
	double call_cpu_s;
	void *impl;
};

/* A sleeping wait (SL_COMM_WAIT_SLEEP) sleeps between its tests as plan/rank_wait.h says. */

/* What a sleeping wait costs on this rank's device, measured by sl_comm_idle_wait_probe(). */
struct sl_comm_idle_cost {
	long tests;
	double cpu_per_test_s;   /* process CPU per test and sleep (the test, the wake-up) */
	double late_per_test_s;  /* how much longer than the asked sleep a test and sleep take */
	double call_cpu_per_test_s; /* of it, the thread CPU inside the test call itself: what
				     * a test that finds nothing costs count_call_cpu */
};

/* Waits asleep (SL_COMM_WAIT_SLEEP's loop, at its longest sleep) on a receive that nothing
 * matches for `seconds`, and measures what each test costs: the simulator charges it to a
 * CPU-quota device's budget. Local to the calling rank (no other rank takes part). */
int sl_comm_idle_wait_probe(struct sl_comm *comm, double seconds, struct sl_comm_idle_cost *out,
			    struct sl_err *err);

/* Sets this rank's wait and agrees with the others whether collectives run as their
 * non-blocking forms (yes when some rank waits asleep). A collective over the world: every rank
 * calls it, before any other collective that depends on it. */
int sl_comm_set_idle_wait(struct sl_comm *comm, enum sl_comm_idle_wait wait, struct sl_err *err);

/* The wait that suits a rank on a device type with cpu_quota_cores (0: none): sleeping for a
 * CPU quota, polling otherwise. SAILOR_MPI_WAIT=poll|sleep in the environment overrides it (to
 * measure the difference). */
enum sl_comm_idle_wait sl_comm_idle_wait_for(double cpu_quota_cores);

/* Backends. sl_comm_mpi_init() initialises MPI (thread level FUNNELED: only the thread that
 * runs the schedule calls MPI; OpenMP threads compute). */
int sl_comm_mpi_init(struct sl_comm *comm, int *argc, char ***argv, struct sl_err *err);

static inline int sl_comm_split(struct sl_comm *c, int colour, int key, struct sl_comm_group *out,
				struct sl_err *err)
{
	return c->backend->split(c, colour, key, out, err);
}
static inline void sl_comm_group_free(struct sl_comm *c, struct sl_comm_group *g)
{
	c->backend->group_free(c, g);
}
static inline int sl_comm_isend(struct sl_comm *c, const void *buf, long long count,
				enum sl_comm_dtype t, int dest, int tag, struct sl_comm_request *r,
				struct sl_err *err)
{
	return c->backend->isend(c, buf, count, t, dest, tag, r, err);
}
static inline int sl_comm_irecv(struct sl_comm *c, void *buf, long long count,
				enum sl_comm_dtype t, int source, int tag,
				struct sl_comm_request *r, struct sl_err *err)
{
	return c->backend->irecv(c, buf, count, t, source, tag, r, err);
}
/* Waits for r if it is active (an inactive request returns at once). */
static inline int sl_comm_wait(struct sl_comm *c, struct sl_comm_request *r, struct sl_err *err)
{
	return r->active ? c->backend->wait(c, r, err) : 0;
}
static inline int sl_comm_allreduce(struct sl_comm *c, const struct sl_comm_group *g, void *buf,
				    long long count, enum sl_comm_dtype t, enum sl_comm_op op,
				    struct sl_err *err)
{
	return g->size <= 1 ? 0 : c->backend->allreduce(c, g, buf, count, t, op, err);
}
int sl_comm_allgather(struct sl_comm *c, const struct sl_comm_group *g, const void *in, void *out,
		      long long count, enum sl_comm_dtype t, struct sl_err *err);
/* See struct sl_comm_backend; a group of one copies (reduce-scatter) or does nothing. */
int sl_comm_reduce_scatter(struct sl_comm *c, const struct sl_comm_group *g, const void *in,
			   void *out, const int *counts, enum sl_comm_dtype t, struct sl_err *err);
static inline int sl_comm_allgatherv(struct sl_comm *c, const struct sl_comm_group *g, void *buf,
				     const int *counts, enum sl_comm_dtype t, struct sl_err *err)
{
	return g->size <= 1 ? 0 : c->backend->allgatherv(c, g, buf, counts, t, err);
}
static inline int sl_comm_broadcast(struct sl_comm *c, const struct sl_comm_group *g, void *buf,
				    long long count, enum sl_comm_dtype t, int root,
				    struct sl_err *err)
{
	return g->size <= 1 ? 0 : c->backend->broadcast(c, g, buf, count, t, root, err);
}
/* An inactive request is done. */
static inline int sl_comm_test(struct sl_comm *c, struct sl_comm_request *r, int *done,
			       struct sl_err *err)
{
	*done = 1;
	return r->active ? c->backend->test(c, r, done, err) : 0;
}
static inline int sl_comm_barrier(struct sl_comm *c, const struct sl_comm_group *g,
				  struct sl_err *err)
{
	return g->size <= 1 ? 0 : c->backend->barrier(c, g, err);
}
static inline void sl_comm_abort(struct sl_comm *c, int status) { c->backend->abort(c, status); }
static inline void sl_comm_finalize(struct sl_comm *c) { c->backend->finalize(c); }

/* Bytes of one element of dtype. */
size_t sl_comm_dtype_bytes(enum sl_comm_dtype t);

#endif
