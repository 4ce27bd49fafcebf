/* When a message over OpenMPI's rendezvous limit moves: rank 0 MPI_Isends BYTES to rank 1 and
 * computes SENDER_BUSY_S before it waits; rank 1 computes RECEIVER_BUSY_S before it receives.
 * Prints the time rank 1 spent in MPI_Recv (mean and least over the repeats after the first).
 * If part of the message moved while rank 1 computed, its receive is shorter when it comes
 * later; if the message waits for the receive (and the sender's next MPI call), it is not.
 * Used by rendezvous_probe.sh on a testbed link; the runtime model's transfers
 * (src/sim/time_runtime.c) follow what it shows.
 *
 * usage (2 ranks): rendezvous_probe BYTES SENDER_BUSY_S RECEIVER_BUSY_S REPEATS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* compute (outside MPI, so nothing progresses) for seconds */
static void busy(double seconds)
{
	double t0 = now_s();
	while (now_s() - t0 < seconds)
		;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 5 || size != 2) {
		if (rank == 0)
			fprintf(stderr, "usage (2 ranks): rendezvous_probe BYTES SENDER_BUSY_S "
					"RECEIVER_BUSY_S REPEATS\n");
		MPI_Finalize();
		return 2;
	}
	int bytes = atoi(argv[1]), repeats = atoi(argv[4]);
	double sender_busy = atof(argv[2]), receiver_busy = atof(argv[3]);
	char *buf = calloc(bytes > 0 ? (size_t)bytes : 1, 1);
	double sum = 0, least = 1e30;
	for (int i = 0; i < repeats; i++) {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0) {
			MPI_Request req;
			MPI_Isend(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &req);
			busy(sender_busy);
			MPI_Wait(&req, MPI_STATUS_IGNORE);
		} else {
			busy(receiver_busy);
			double t0 = now_s();
			MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			double took = now_s() - t0;
			if (i > 0) { /* the first sets the connection up */
				sum += took;
				least = took < least ? took : least;
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
		busy(0.3); /* the link's shaper refills its burst: every repeat starts alike */
	}
	if (rank == 1)
		printf("bytes %d, sender computes %.3f s after the Isend, receiver %.3f s before the "
		       "receive: receive took %.4f s (least %.4f)\n",
		       bytes, sender_busy, receiver_busy, sum / (repeats - 1), least);
	free(buf);
	MPI_Finalize();
	return 0;
}
