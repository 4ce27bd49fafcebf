/* Replays fuzz inputs without libFuzzer: `fuzz_plan FILE|DIR...` runs every file (a folder: each
 * file in it, sorted) through the target's LLVMFuzzerTestOneInput once. Linked with each
 * fuzz/fuzz_*.c by the normal compiler, so the regression corpus runs in `make test` and under
 * `make check`'s sanitizers. Exits 0 when every input ran (a crash ends the process). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_util.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", path);
		return 1;
	}
	fprintf(stderr, "replay %s (%zu bytes)\n", path, n);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int failed = 0, count = 0;
	for (int i = 1; i < argc; i++) {
		struct stat sb;
		if (stat(argv[i], &sb) != 0) {
			perror(argv[i]);
			failed = 1;
			continue;
		}
		if (!S_ISDIR(sb.st_mode)) {
			failed |= run_file(argv[i]);
			count++;
			continue;
		}
		struct dirent **entries = NULL;
		int n = scandir(argv[i], &entries, NULL, alphasort);
		for (int e = 0; e < n; e++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], entries[e]->d_name);
			if (entries[e]->d_name[0] != '.' && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
				failed |= run_file(path);
				count++;
			}
			free(entries[e]);
		}
		free(entries);
	}
	fprintf(stderr, "replayed %d inputs\n", count);
	return failed;
}
