/* Atomic file output: every file sailor writes (plans, token files, safetensors, checkpoints)
 * goes through here, so a reader sees either the old file or the whole new one, never a part,
 * and a failed or interrupted write leaves nothing behind.
 *
 * How: the bytes go to a hidden temporary file in the destination's folder
 * ("<dir>/.<name>.tmp-XXXXXX", same file system so rename is atomic), which is flushed and
 * fsync'd, renamed over the destination, and the folder fsync'd so the rename survives a crash.
 *
 * Usage:
 *   struct sl_atomic_file af;
 *   if (sl_atomic_open(&af, path, "plan", err)) return err->code;
 *   ... fwrite(..., af.f) ...
 *   return sl_atomic_commit(&af, err);   // or sl_atomic_abort(&af) on an error of your own
 * After commit or abort af.f is closed and the temporary file gone either way.
 */
#ifndef SL_UTIL_ATOMIC_FILE_H
#define SL_UTIL_ATOMIC_FILE_H

#include <stdio.h>

#include "util/err.h"

#define SL_ATOMIC_PATH_MAX 4096

struct sl_atomic_file {
	FILE *f;                          /* write here */
	const char *what;                 /* "plan", "checkpoint": names the file in messages */
	char path[SL_ATOMIC_PATH_MAX];    /* the destination */
	char tmp[SL_ATOMIC_PATH_MAX + 32];/* the temporary file */
};

/* Creates the temporary file (mode 0666 minus the umask, like fopen). On failure nothing is
 * created and err says "cannot write <what> '<path>': <reason>". */
int sl_atomic_open(struct sl_atomic_file *af, const char *path, const char *what,
		   struct sl_err *err);

/* Flushes, fsyncs and closes the temporary file, renames it over the destination and fsyncs the
 * folder. On any failure (a full disk shows here) the temporary file is removed, the destination
 * is untouched and err names it with the OS reason (SL_EIO). */
int sl_atomic_commit(struct sl_atomic_file *af, struct sl_err *err);

/* Closes and removes the temporary file; the destination is untouched. */
void sl_atomic_abort(struct sl_atomic_file *af);

/* Checks, before any work, that path could be written: its folder exists and is writable. For
 * commands that write at the end of a long run (train --save-safetensors), so that a typo
 * fails at once and not after hours. Same messages as sl_atomic_open. */
int sl_atomic_check(const char *path, const char *what, struct sl_err *err);

/* Writes size bytes from data to path atomically (open + fwrite + commit). */
int sl_atomic_write(const char *path, const char *what, const void *data, size_t size,
		    struct sl_err *err);

#endif
