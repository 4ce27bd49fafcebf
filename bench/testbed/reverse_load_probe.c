/* What traffic the other way does to a shaped link (reverse_load_probe.sh): three ranks, A and C
 * on two hosts of one zone, B on a host of another zone. A sends B a message of BYTES
 *   alone  with nothing else on the link;
 *   same   while B sends A as much (the two-rank all-reduce's pattern, which the network profile
 *          measures: each way's acknowledgements queue behind the other way's data);
 *   other  while B sends C as much (a ring's pattern: B's traffic back into A's zone goes to
 *          another host, through the same shaped class of B's link);
 * and two ring all-reduces of BYTES as the runtime runs them (MPI_Iallreduce, libnbc's ring:
 * reduce-scatter then all-gather, one chunk of BYTES / m per round):
 *   ring2  over A and B (what the network profile's two-rank all-reduce measures);
 *   ring3  over A, B, C in that order (A -> B and B -> C cross the link, C -> A stays in the
 *          zone): the "other" pattern in rounds.
 * B times A's message from the barrier that starts each try to the receive's end; a ring is
 * timed on B from the barrier to the call's end, and its rate is what crosses A -> B, 2(m-1)
 * chunks, over that time. Modes take turns within a repeat, after a quiet pause (the links'
 * buckets refill). Prints, per mode, the median and least seconds and the rate.
 *
 * usage: reverse_load_probe BYTES REPEATS        (3 ranks)
 *        reverse_load_probe ring BYTES REPEATS   (any number of ranks: one ring all-reduce of
 *        BYTES over all of them, in rank order, REPEATS times; prints each try's seconds, the
 *        slowest rank's, and the rate of what crosses each hop, 2(m-1)/m x BYTES) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { RANK_A = 0, RANK_B = 1, RANK_C = 2, MODES = 5, RING2 = 3, RING3 = 4 };
static const char *const MODE_NAMES[MODES] = {"alone", "same", "other", "ring2", "ring3"};
static MPI_Comm pair_comm; /* A and B; MPI_COMM_NULL on C */

/* bytes that cross A -> B in a ring all-reduce of bytes over m ranks: 2(m-1) chunks of 1/m */
static double ring_hop_bytes(int mode, int bytes)
{
	int m = mode == RING2 ? 2 : 3;
	return 2.0 * (m - 1) / m * bytes;
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One try of a mode; returns the seconds this rank timed (A -> B on B, B's message on its
 * receiver), or -1 where it timed nothing. */
static double one_try(int mode, int rank, char *out, char *in, int bytes)
{
	MPI_Request req[2];
	int n = 0;
	double timed = -1;
	if (mode == RING2 || mode == RING3) /* zeros: the point-to-point tries' bytes would sum */
		memset(in, 0, (size_t)bytes);   /* as denormals */
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	if (mode == RING2 || mode == RING3) {
		MPI_Comm c = mode == RING2 ? pair_comm : MPI_COMM_WORLD;
		if (c != MPI_COMM_NULL) {
			MPI_Request r;
			MPI_Iallreduce(MPI_IN_PLACE, in, bytes / 4, MPI_FLOAT, MPI_SUM, c, &r);
			MPI_Wait(&r, MPI_STATUS_IGNORE);
			if (rank == RANK_B)
				timed = MPI_Wtime() - t0;
		}
		MPI_Barrier(MPI_COMM_WORLD);
		return timed;
	}
	if (rank == RANK_A) {
		MPI_Isend(out, bytes, MPI_CHAR, RANK_B, 1, MPI_COMM_WORLD, &req[n++]);
		if (mode == 1)
			MPI_Irecv(in, bytes, MPI_CHAR, RANK_B, 2, MPI_COMM_WORLD, &req[n++]);
	} else if (rank == RANK_B) {
		MPI_Irecv(in, bytes, MPI_CHAR, RANK_A, 1, MPI_COMM_WORLD, &req[n++]);
		if (mode == 1)
			MPI_Isend(out, bytes, MPI_CHAR, RANK_A, 2, MPI_COMM_WORLD, &req[n++]);
		else if (mode == 2)
			MPI_Isend(out, bytes, MPI_CHAR, RANK_C, 2, MPI_COMM_WORLD, &req[n++]);
	} else if (rank == RANK_C && mode == 2) {
		MPI_Irecv(in, bytes, MPI_CHAR, RANK_B, 2, MPI_COMM_WORLD, &req[n++]);
	}
	if (rank == RANK_B) {
		/* A's message first: its end is what this probe is about */
		MPI_Wait(&req[0], MPI_STATUS_IGNORE);
		timed = MPI_Wtime() - t0;
		if (n > 1)
			MPI_Wait(&req[1], MPI_STATUS_IGNORE);
	} else if (n > 0) {
		MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	return timed;
}

/* The ring mode: a world ring all-reduce laid over the hosts as the hostfile orders the ranks
 * (a plan's data-parallel group, say), outside the runtime's quotas and sleeping waits. */
static int world_ring(int rank, int size, int bytes, int repeats)
{
	float *buf = calloc((size_t)bytes / 4 + 1, sizeof(float));
	if (!buf) {
		fprintf(stderr, "reverse_load_probe: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Request r;
	MPI_Iallreduce(MPI_IN_PLACE, buf, 256, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
	MPI_Wait(&r, MPI_STATUS_IGNORE); /* every connection of the ring once */
	for (int k = 0; k < repeats; k++) {
		memset(buf, 0, (size_t)bytes / 4 * sizeof(float));
		usleep(300000);
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		MPI_Iallreduce(MPI_IN_PLACE, buf, bytes / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
		MPI_Wait(&r, MPI_STATUS_IGNORE);
		double mine = MPI_Wtime() - t0, slowest = 0;
		MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		double hop = 2.0 * (size - 1) / size * bytes;
		if (rank == 0)
			printf("ring of %d ranks, %d bytes: %.3f s, %.0f bytes each hop, %.3f MB/s\n",
			       size, bytes, slowest, hop, hop / slowest / 1e6);
		fflush(stdout);
	}
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc == 4 && strcmp(argv[1], "ring") == 0) {
		int bytes = atoi(argv[2]), repeats = atoi(argv[3]);
		int rc = bytes >= 4 && repeats > 0 && size > 1 ? world_ring(rank, size, bytes, repeats) : 2;
		if (rc && rank == 0)
			fprintf(stderr, "reverse_load_probe ring: BYTES >= 4, REPEATS > 0, 2 or more ranks\n");
		MPI_Finalize();
		return rc;
	}
	if (argc != 3 || size != 3) {
		if (rank == 0)
			fprintf(stderr, "usage: mpirun -np 3 reverse_load_probe BYTES REPEATS\n"
					"       mpirun -np N reverse_load_probe ring BYTES REPEATS\n");
		MPI_Finalize();
		return 2;
	}
	int bytes = atoi(argv[1]), repeats = atoi(argv[2]);
	if (bytes <= 0 || repeats <= 0) {
		if (rank == 0)
			fprintf(stderr, "reverse_load_probe: BYTES and REPEATS must be positive\n");
		MPI_Finalize();
		return 2;
	}
	char *out = malloc((size_t)bytes), *in = malloc((size_t)bytes);
	double *times = calloc((size_t)MODES * repeats, sizeof(double));
	if (!out || !in || !times) {
		fprintf(stderr, "reverse_load_probe: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(out, rank + 1, (size_t)bytes);
	memset(in, 0, (size_t)bytes); /* the rings sum floats in it: zeros stay finite */
	MPI_Comm_split(MPI_COMM_WORLD, rank == RANK_C ? MPI_UNDEFINED : 0, rank, &pair_comm);
	/* every connection once before timing (OpenMPI's TCP transport connects on first use) */
	for (int mode = 1; mode < MODES; mode++)
		one_try(mode, rank, out, in, 1024);
	memset(in, 0, (size_t)bytes);
	for (int r = 0; r < repeats; r++) {
		for (int k = 0; k < MODES; k++) {
			int mode = (k + r) % MODES; /* turns rotate: no mode always follows another */
			usleep(300000);
			double s = one_try(mode, rank, out, in, bytes);
			times[mode * repeats + r] = s;
		}
	}
	if (rank == RANK_B) {
		for (int mode = 0; mode < MODES; mode++) {
			double *t = &times[mode * repeats];
			qsort(t, (size_t)repeats, sizeof(double), compare_doubles);
			double median = repeats % 2 ? t[repeats / 2]
						    : 0.5 * (t[repeats / 2 - 1] + t[repeats / 2]);
			double moved = mode >= RING2 ? ring_hop_bytes(mode, bytes) : bytes;
			printf("bytes %d, %-5s: %.0f bytes A -> B in %.4f s median (least %.4f), "
			       "%.3f MB/s\n",
			       bytes, MODE_NAMES[mode], moved, median, t[0], moved / median / 1e6);
		}
		fflush(stdout);
	}
	free(out);
	free(in);
	free(times);
	if (pair_comm != MPI_COMM_NULL)
		MPI_Comm_free(&pair_comm);
	MPI_Finalize();
	return 0;
}
