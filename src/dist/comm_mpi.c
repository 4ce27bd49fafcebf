/* The OpenMPI backend of the communication interface (comm.h).
 * Invariants: only the thread that called sl_comm_mpi_init() calls MPI (MPI_THREAD_FUNNELED);
 * MPI errors are returned, not fatal (MPI_ERRORS_RETURN on every communicator), so the runtime
 * can say which rank, role and step failed before it aborts the job; counts above INT_MAX are
 * split into pieces for collectives and refused for point-to-point transfers (an activation of
 * 8 GB is not a transfer this runtime makes). */
#include "dist/comm.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

_Static_assert(sizeof(MPI_Request) <= sizeof(((struct sl_comm_request *)0)->storage),
	       "an MPI_Request must fit in struct sl_comm_request");
_Static_assert(sizeof(MPI_Comm) <= sizeof(void *), "an MPI_Comm must fit in a pointer");

size_t sl_comm_dtype_bytes(enum sl_comm_dtype t)
{
	switch (t) {
	case SL_COMM_FLOAT: return sizeof(float);
	case SL_COMM_DOUBLE: return sizeof(double);
	case SL_COMM_INT32: return 4;
	case SL_COMM_BYTE: return 1;
	}
	return 1;
}

static MPI_Datatype mpi_type(enum sl_comm_dtype t)
{
	switch (t) {
	case SL_COMM_FLOAT: return MPI_FLOAT;
	case SL_COMM_DOUBLE: return MPI_DOUBLE;
	case SL_COMM_INT32: return MPI_INT32_T;
	case SL_COMM_BYTE: return MPI_BYTE;
	}
	return MPI_BYTE;
}

static MPI_Comm group_comm(const struct sl_comm_group *g)
{
	MPI_Comm c;
	memcpy(&c, &g->impl, sizeof(c));
	return c;
}

static int mpi_fail(struct sl_err *err, int code, const char *what)
{
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "MPI error %d", code);
	return sl_err_set(err, SL_EIO, "%s failed: %s", what, text);
}

static int mpi_split(struct sl_comm *comm, int colour, int key, struct sl_comm_group *out,
		     struct sl_err *err)
{
	MPI_Comm c;
	int rc = MPI_Comm_split(group_comm(&comm->world),
				colour == SL_COMM_NO_GROUP ? MPI_UNDEFINED : colour, key, &c);
	if (rc != MPI_SUCCESS)
		return mpi_fail(err, rc, "MPI_Comm_split");
	memset(out, 0, sizeof(*out));
	if (c == MPI_COMM_NULL) {
		out->size = 0;
		out->rank = -1;
	} else {
		MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
		MPI_Comm_rank(c, &out->rank);
		MPI_Comm_size(c, &out->size);
	}
	memcpy(&out->impl, &c, sizeof(c));
	return 0;
}

static void mpi_group_free(struct sl_comm *comm, struct sl_comm_group *g)
{
	MPI_Comm c = group_comm(g);
	if (c != MPI_COMM_NULL && c != MPI_COMM_WORLD)
		MPI_Comm_free(&c);
	memset(g, 0, sizeof(*g));
	g->rank = -1;
}

static int check_p2p_count(long long count, struct sl_err *err)
{
	if (count < 0 || count > INT_MAX)
		return sl_err_set(err, SL_EINPUT, "transfer of %lld elements is larger than one "
				  "MPI message (%d)", count, INT_MAX);
	return 0;
}

static int mpi_isend(struct sl_comm *comm, const void *buf, long long count,
		     enum sl_comm_dtype dtype, int dest, int tag, struct sl_comm_request *req,
		     struct sl_err *err)
{
	int rc = check_p2p_count(count, err);
	if (rc)
		return rc;
	MPI_Request r;
	rc = MPI_Isend(buf, (int)count, mpi_type(dtype), dest, tag, group_comm(&comm->world), &r);
	if (rc != MPI_SUCCESS)
		return mpi_fail(err, rc, "MPI_Isend");
	memcpy(req->storage, &r, sizeof(r));
	req->active = 1;
	return 0;
}

static int mpi_irecv(struct sl_comm *comm, void *buf, long long count, enum sl_comm_dtype dtype,
		     int source, int tag, struct sl_comm_request *req, struct sl_err *err)
{
	int rc = check_p2p_count(count, err);
	if (rc)
		return rc;
	MPI_Request r;
	rc = MPI_Irecv(buf, (int)count, mpi_type(dtype), source, tag, group_comm(&comm->world), &r);
	if (rc != MPI_SUCCESS)
		return mpi_fail(err, rc, "MPI_Irecv");
	memcpy(req->storage, &r, sizeof(r));
	req->active = 1;
	return 0;
}

static int mpi_wait(struct sl_comm *comm, struct sl_comm_request *req, struct sl_err *err)
{
	MPI_Request r;
	memcpy(&r, req->storage, sizeof(r));
	int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
	req->active = 0;
	if (rc != MPI_SUCCESS)
		return mpi_fail(err, rc, "MPI_Wait");
	return 0;
}

/* Collectives in pieces of at most INT_MAX / 2 elements. */
#define PIECE (INT_MAX / 2)

static int mpi_allreduce(struct sl_comm *comm, const struct sl_comm_group *g, void *buf,
			 long long count, enum sl_comm_dtype dtype, enum sl_comm_op op,
			 struct sl_err *err)
{
	size_t width = sl_comm_dtype_bytes(dtype);
	for (long long off = 0; off < count; off += PIECE) {
		long long n = count - off < PIECE ? count - off : PIECE;
		int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + (size_t)off * width, (int)n,
				       mpi_type(dtype), op == SL_COMM_MAX ? MPI_MAX : MPI_SUM,
				       group_comm(g));
		if (rc != MPI_SUCCESS)
			return mpi_fail(err, rc, "MPI_Allreduce");
	}
	return 0;
}

static int mpi_allgather(struct sl_comm *comm, const struct sl_comm_group *g, const void *in,
			 void *out, long long count, enum sl_comm_dtype dtype, struct sl_err *err)
{
	if (count > PIECE / (g->size > 0 ? g->size : 1))
		return sl_err_set(err, SL_EINPUT, "all-gather of %lld elements per rank is too large",
				  count);
	int rc = MPI_Allgather(in, (int)count, mpi_type(dtype), out, (int)count, mpi_type(dtype),
			       group_comm(g));
	if (rc != MPI_SUCCESS)
		return mpi_fail(err, rc, "MPI_Allgather");
	return 0;
}

static int mpi_reduce_scatter(struct sl_comm *comm, const struct sl_comm_group *g,
			      const void *in, void *out, const int *counts,
			      enum sl_comm_dtype dtype, struct sl_err *err)
{
	(void)comm;
	int rc = MPI_Reduce_scatter(in == out ? MPI_IN_PLACE : in, out, counts, mpi_type(dtype),
				    MPI_SUM, group_comm(g));
	if (rc != MPI_SUCCESS)
		return mpi_fail(err, rc, "MPI_Reduce_scatter");
	return 0;
}

static int mpi_allgatherv(struct sl_comm *comm, const struct sl_comm_group *g, void *buf,
			  const int *counts, enum sl_comm_dtype dtype, struct sl_err *err)
{
	(void)comm;
	int *displs = malloc((size_t)g->size * sizeof(int));
	if (!displs)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	long long at = 0;
	for (int i = 0; i < g->size; i++) {
		displs[i] = (int)at;
		at += counts[i];
	}
	int rc = at > INT_MAX ? MPI_ERR_COUNT
			      : MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts,
					       displs, mpi_type(dtype), group_comm(g));
	free(displs);
	if (rc != MPI_SUCCESS)
		return mpi_fail(err, rc, "MPI_Allgatherv");
	return 0;
}

static int mpi_broadcast(struct sl_comm *comm, const struct sl_comm_group *g, void *buf,
			 long long count, enum sl_comm_dtype dtype, int root, struct sl_err *err)
{
	size_t width = sl_comm_dtype_bytes(dtype);
	for (long long off = 0; off < count; off += PIECE) {
		long long n = count - off < PIECE ? count - off : PIECE;
		int rc = MPI_Bcast((char *)buf + (size_t)off * width, (int)n, mpi_type(dtype), root,
				   group_comm(g));
		if (rc != MPI_SUCCESS)
			return mpi_fail(err, rc, "MPI_Bcast");
	}
	return 0;
}

static int mpi_barrier(struct sl_comm *comm, const struct sl_comm_group *g, struct sl_err *err)
{
	int rc = MPI_Barrier(group_comm(g));
	return rc == MPI_SUCCESS ? 0 : mpi_fail(err, rc, "MPI_Barrier");
}

static void mpi_abort(struct sl_comm *comm, int status) { MPI_Abort(MPI_COMM_WORLD, status); }

static void mpi_finalize(struct sl_comm *comm)
{
	int done = 0;
	MPI_Finalized(&done);
	if (!done)
		MPI_Finalize();
}

static const struct sl_comm_backend mpi_backend = {
	.name = "mpi",
	.split = mpi_split,
	.group_free = mpi_group_free,
	.isend = mpi_isend,
	.irecv = mpi_irecv,
	.wait = mpi_wait,
	.allreduce = mpi_allreduce,
	.allgather = mpi_allgather,
	.reduce_scatter = mpi_reduce_scatter,
	.allgatherv = mpi_allgatherv,
	.broadcast = mpi_broadcast,
	.barrier = mpi_barrier,
	.abort = mpi_abort,
	.finalize = mpi_finalize,
};

int sl_comm_allgather(struct sl_comm *c, const struct sl_comm_group *g, const void *in, void *out,
		      long long count, enum sl_comm_dtype t, struct sl_err *err)
{
	if (g->size <= 1) {
		if (out != in)
			memcpy(out, in, (size_t)count * sl_comm_dtype_bytes(t));
		return 0;
	}
	return c->backend->allgather(c, g, in, out, count, t, err);
}

int sl_comm_reduce_scatter(struct sl_comm *c, const struct sl_comm_group *g, const void *in,
			   void *out, const int *counts, enum sl_comm_dtype t, struct sl_err *err)
{
	if (g->size <= 1) {
		memmove(out, in, (size_t)counts[0] * sl_comm_dtype_bytes(t));
		return 0;
	}
	return c->backend->reduce_scatter(c, g, in, out, counts, t, err);
}

int sl_comm_mpi_init(struct sl_comm *comm, int *argc, char ***argv, struct sl_err *err)
{
	memset(comm, 0, sizeof(*comm));
	int provided = 0;
	int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
	if (rc != MPI_SUCCESS)
		return sl_err_set(err, SL_EIO, "MPI_Init_thread failed (error %d)", rc);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	comm->backend = &mpi_backend;
	MPI_Comm_rank(MPI_COMM_WORLD, &comm->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &comm->size);
	MPI_Comm world = MPI_COMM_WORLD;
	comm->world.rank = comm->rank;
	comm->world.size = comm->size;
	memcpy(&comm->world.impl, &world, sizeof(world));
	return 0;
}
