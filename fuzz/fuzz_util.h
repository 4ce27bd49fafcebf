/* Helpers shared by the fuzz targets (fuzz/fuzz_*.c).
 *
 * Each target defines LLVMFuzzerTestOneInput(data, size) and feeds the bytes to one parser
 * through the same entry point the commands use. The same source is built twice:
 *   - with clang -fsanitize=fuzzer,address,undefined into build-fuzz/fuzz/ (`make fuzz`);
 *   - with the normal compiler and fuzz/replay_main.c into $(BUILD)/fuzz-replay/, a plain
 *     main() that replays fuzz/corpus-regression/<target>/ in `make test` and `make check`.
 * A target returns 0 whatever the parser says: only a crash, a sanitizer report, a timeout or
 * an allocation beyond libFuzzer's limits is a finding. Targets that check an invariant of an
 * accepted input call fuzz_assert(), which aborts.
 *
 * Parsers that take a path get the bytes through a file in a private temporary folder (on
 * /dev/shm when it exists, so no disk I/O), created once per process and removed at exit.
 */
#ifndef SL_FUZZ_UTIL_H
#define SL_FUZZ_UTIL_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef SAILOR_SOURCE_DIR
#define SAILOR_SOURCE_DIR "."
#endif

static char fuzz_dir_path[256];

static inline void fuzz_remove_dir(void)
{
	char cmd[300];
	if (!fuzz_dir_path[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fuzz_dir_path);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz: cannot remove %s\n", fuzz_dir_path);
}

/* Points sailor at the shipped data (SAILOR_DATA) and quiets nothing: messages of rejected
 * inputs go to stderr like in the commands. Idempotent. */
static inline void fuzz_setup(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	if (!getenv("SAILOR_DATA"))
		setenv("SAILOR_DATA", SAILOR_SOURCE_DIR "/data", 1);
}

/* The private temporary folder, created on first use. */
static inline const char *fuzz_dir(void)
{
	if (fuzz_dir_path[0])
		return fuzz_dir_path;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/sailor-fuzz-XXXXXX", base);
	if (!mkdtemp(fuzz_dir_path)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	atexit(fuzz_remove_dir);
	return fuzz_dir_path;
}

/* Creates the folder part of <fuzz dir>/<name> and writes the full path into p. */
static inline void fuzz_path(char *p, size_t size, const char *name)
{
	snprintf(p, size, "%s/%s", fuzz_dir(), name);
	char *slash = strrchr(p, '/');
	if (slash && slash > p + strlen(fuzz_dir())) {
		*slash = '\0';
		if (access(p, F_OK) != 0) {
			char cmd[600];
			snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", p);
			if (system(cmd) != 0)
				abort();
		}
		*slash = '/';
	}
}

/* Writes data to <fuzz dir>/<name> (name may contain folders, created) and returns the path
 * (one of four rotating static buffers). Whatever was there is unlinked first and the file is
 * opened with O_NOFOLLOW: a link to a shipped file (fuzz_link_data) is replaced, never written
 * through. */
static inline const char *fuzz_write(const char *name, const void *data, size_t size)
{
	static char path[4][512];
	static int slot;
	char *p = path[slot++ % 4];
	fuzz_path(p, sizeof(path[0]), name);
	unlink(p);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) != 0) {
		perror(p);
		abort();
	}
	return p;
}

/* Makes <fuzz dir>/<name> a symbolic link to the shipped file <data dir>/<relative>. */
static inline void fuzz_link_data(const char *name, const char *relative)
{
	char target[512], link[512];
	snprintf(target, sizeof(target), "%s/data/%s", SAILOR_SOURCE_DIR, relative);
	if (target[0] != '/') {
		char cwd[256];
		if (!getcwd(cwd, sizeof(cwd)))
			abort();
		snprintf(target, sizeof(target), "%s/%s/data/%s", cwd, SAILOR_SOURCE_DIR, relative);
	}
	fuzz_path(link, sizeof(link), name);
	unlink(link);
	if (symlink(target, link) != 0) {
		perror(link);
		abort();
	}
}

#define fuzz_assert(cond)                                                                        \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "fuzz: invariant broken: %s (%s:%d)\n", #cond, __FILE__,  \
				__LINE__);                                                       \
			abort();                                                                 \
		}                                                                                \
	} while (0)

#endif
