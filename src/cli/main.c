/* `sailor <subcommand> [options]`: dispatches through the table in commands.c. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"

#if defined(__SANITIZE_ADDRESS__)
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Only in sanitizer builds (`make check`). A rank that mpirun starts holds OpenMPI's own
 * allocations (MPI_Init's and its plugins'), never freed, which LeakSanitizer reports at exit:
 * every clean distributed run then exited 1. Their stacks cannot be suppressed by library (the
 * fast unwinder stops at OpenMPI's first frame without a frame pointer, and the plugins are
 * unloaded, nameless, by exit); the full unwinder would reach the libraries but made ranks 3
 * times slower, enough to break the timing of the controller's tests. So ranks (OpenMPI sets
 * OMPI_COMM_WORLD_SIZE before it starts them; srun --mpi=pmix, PMIX_RANK) run without leak
 * detection; every other command, `sailor train` on the same layers included, keeps it. */

/* Whether the environment holds OMPI_COMM_WORLD_SIZE. Called while the sanitizer starts, before
 * libc's getenv can see the environment and before the shadow memory exists: raw system calls
 * on /proc/self/environ, no libc string function, no instrumentation. */
__attribute__((no_sanitize("address", "undefined"))) static int in_mpi_rank(void)
{
	static char env[1 << 16];
	/* mpirun's ranks; srun --mpi=pmix's tasks (Slurm's PMIx plugin sets PMIX_RANK) */
	static const char *const keys[] = {"OMPI_COMM_WORLD_SIZE=", "PMIX_RANK="};
	long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/environ", O_RDONLY);
	if (fd < 0)
		return 0;
	long n = syscall(SYS_read, fd, env, sizeof(env) - 1);
	syscall(SYS_close, fd);
	for (long i = 0; i < n; i++) {
		if (i > 0 && env[i - 1] != '\0')
			continue;
		for (int j = 0; j < 2; j++) {
			const char *key = keys[j];
			long k = 0;
			while (key[k] && i + k < n && env[i + k] == key[k])
				k++;
			if (!key[k])
				return 1;
		}
	}
	return 0;
}

const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return in_mpi_rank() ? "detect_leaks=0" : "";
}
#endif

static void print_overview(FILE *stream)
{
	fprintf(stream, "usage: sailor <command> [options]\n\n"
			"Plans, simulates and runs distributed training over heterogeneous GPU pools.\n\n"
			"commands:\n");
	for (size_t i = 0; i < sl_cli_command_count; i++)
		fprintf(stream, "  %-10s %s\n", sl_cli_commands[i]->name, sl_cli_commands[i]->summary);
	fprintf(stream, "\n'sailor <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		print_overview(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		print_overview(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version"))
		argv[1] = "version";
	for (size_t i = 0; i < sl_cli_command_count; i++)
		if (!strcmp(argv[1], sl_cli_commands[i]->name))
			return sl_cli_commands[i]->run(argc - 1, argv + 1);
	fprintf(stderr, "sailor: '%s' is not a sailor command (see 'sailor --help')\n", argv[1]);
	return 2;
}
