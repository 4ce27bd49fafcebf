/* Data directory lookup: see paths.h. Resolved once and cached. */
#include "util/paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char data_dir[PATH_MAX];

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *sl_paths_data_dir(void)
{
	if (data_dir[0])
		return data_dir;
	const char *env = getenv("SAILOR_DATA");
	if (env && *env) {
		snprintf(data_dir, sizeof(data_dir), "%s", env);
		return data_dir;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		for (int up = 0; slash && up < 2; up++) {
			*slash = '\0';
			char candidate[PATH_MAX + 8];
			snprintf(candidate, sizeof(candidate), "%s/data", exe);
			if (is_dir(candidate) && strlen(candidate) < sizeof(data_dir)) {
				memcpy(data_dir, candidate, strlen(candidate) + 1);
				return data_dir;
			}
			slash = strrchr(exe, '/');
		}
	}
	snprintf(data_dir, sizeof(data_dir), "data");
	return data_dir;
}

