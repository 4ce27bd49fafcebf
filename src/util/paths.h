/* Where sailor finds its shipped data (GPU catalogue, profiles, network fits, examples).
 * Order: $SAILOR_DATA, then "data/" beside the executable, then its parent's "data/" (the
 * binary in build/), then "./data". */
#ifndef SL_UTIL_PATHS_H
#define SL_UTIL_PATHS_H

#include <stddef.h>

/* The data directory, without a trailing slash. Never NULL (falls back to "data"). */
const char *sl_paths_data_dir(void);

#endif
