/* What one test of a sleeping wait costs in CPU, with other ranks of the machine doing the same
 * (bench/testbed/wait_test_cost.sh). Every rank waits on a receive that nothing matches the way
 * a rank on a CPU-quota device waits (src/runtime/comm_mpi.c: MPI_Test, then nanosleep at the
 * longest sleep of its doubling sequence), for REPEATS windows of WINDOW_S, and prints its
 * process CPU per test in each window. Run with 1, 2, 4, ... ranks, and beside busy
 * co-runners, it shows whether a test's cost is the rank's own or the machine's.
 *
 * usage: mpirun -np N wait_test_cost SLEEP_US WINDOW_S REPEATS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clock_s(clockid_t which)
{
	struct timespec t;
	clock_gettime(which, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, ranks = 1;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	if (argc != 4) {
		if (rank == 0)
			fprintf(stderr, "usage: wait_test_cost SLEEP_US WINDOW_S REPEATS\n");
		MPI_Finalize();
		return 2;
	}
	long sleep_ns = 1000 * atol(argv[1]);
	double window_s = atof(argv[2]);
	int repeats = atoi(argv[3]);
	if (sleep_ns <= 0 || !(window_s > 0) || repeats <= 0 || repeats > 100) {
		if (rank == 0)
			fprintf(stderr, "wait_test_cost: SLEEP_US and WINDOW_S must be positive, "
					"REPEATS 1 to 100\n");
		MPI_Finalize();
		return 2;
	}
	/* a receive from this rank itself, sent only after the windows */
	double payload = 0;
	MPI_Request request;
	MPI_Irecv(&payload, 1, MPI_DOUBLE, rank, 7, MPI_COMM_WORLD, &request);
	MPI_Barrier(MPI_COMM_WORLD);
	double us_per_test[100];
	for (int w = 0; w < repeats; w++) {
		long tests = 0;
		int done = 0;
		double wall0 = clock_s(CLOCK_MONOTONIC), cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
		while (clock_s(CLOCK_MONOTONIC) < wall0 + window_s) {
			MPI_Test(&request, &done, MPI_STATUS_IGNORE);
			tests++;
			struct timespec pause = {0, sleep_ns};
			nanosleep(&pause, NULL);
		}
		us_per_test[w] = 1e6 * (clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / (double)tests;
	}
	MPI_Send(&payload, 1, MPI_DOUBLE, rank, 7, MPI_COMM_WORLD);
	MPI_Wait(&request, MPI_STATUS_IGNORE);
	/* one line per rank, in rank order */
	for (int r = 0; r < ranks; r++) {
		if (r == rank) {
			printf("ranks %d rank %d us_per_test", ranks, rank);
			for (int w = 0; w < repeats; w++)
				printf(" %.2f", us_per_test[w]);
			printf("\n");
			fflush(stdout);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return 0;
}
