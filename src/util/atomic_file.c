/* Atomic file output (see atomic_file.h): temporary file, fsync, rename, fsync the folder. */
#include "util/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The folder part of path ("." when it has none), for the temporary name and the final fsync. */
static void dir_of(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(buf, size, ".");
	else if (slash == path)
		snprintf(buf, size, "/");
	else
		snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

int sl_atomic_open(struct sl_atomic_file *af, const char *path, const char *what,
		   struct sl_err *err)
{
	memset(af, 0, sizeof(*af));
	af->what = what;
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(af->path) || path[len - 1] == '/')
		return sl_err_set(err, SL_EINPUT, "cannot write %s '%s': not a file name", what, path);
	memcpy(af->path, path, len + 1);
	char dir[SL_ATOMIC_PATH_MAX];
	dir_of(path, dir, sizeof(dir));
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	int n = snprintf(af->tmp, sizeof(af->tmp), "%s/.%s.tmp-XXXXXX", dir, base);
	if (n < 0 || (size_t)n >= sizeof(af->tmp))
		return sl_err_set(err, SL_EINPUT, "cannot write %s '%s': the name is too long", what,
				  path);
	int fd = mkstemp(af->tmp);
	if (fd < 0)
		return sl_err_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO,
				  "cannot write %s '%s': %s", what, path, strerror(errno));
	/* mkstemp creates 0600; give the file the mode fopen would have */
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) != 0 || !(af->f = fdopen(fd, "wb"))) {
		int e = errno;
		close(fd);
		unlink(af->tmp);
		return sl_err_set(err, SL_EIO, "cannot write %s '%s': %s", what, path, strerror(e));
	}
	return 0;
}

int sl_atomic_check(const char *path, const char *what, struct sl_err *err)
{
	char dir[SL_ATOMIC_PATH_MAX];
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(dir) || path[len - 1] == '/')
		return sl_err_set(err, SL_EINPUT, "cannot write %s '%s': not a file name", what, path);
	dir_of(path, dir, sizeof(dir));
	if (access(dir, W_OK) != 0)
		return sl_err_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO,
				  "cannot write %s '%s': %s", what, path, strerror(errno));
	return 0;
}

int sl_atomic_commit(struct sl_atomic_file *af, struct sl_err *err)
{
	int ok = fflush(af->f) == 0 && !ferror(af->f) && fsync(fileno(af->f)) == 0;
	int e = errno ? errno : EIO;
	ok = fclose(af->f) == 0 && ok;
	af->f = NULL;
	if (ok && rename(af->tmp, af->path) != 0) {
		ok = 0;
		e = errno;
	}
	if (!ok) {
		unlink(af->tmp);
		return sl_err_set(err, SL_EIO, "cannot write %s '%s': %s", af->what, af->path,
				  strerror(e));
	}
	char dir[SL_ATOMIC_PATH_MAX];
	dir_of(af->path, dir, sizeof(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd >= 0) {
		fsync(dfd); /* best effort: some file systems refuse fsync on folders */
		close(dfd);
	}
	return 0;
}

void sl_atomic_abort(struct sl_atomic_file *af)
{
	if (af->f)
		fclose(af->f);
	af->f = NULL;
	if (af->tmp[0])
		unlink(af->tmp);
}

int sl_atomic_write(const char *path, const char *what, const void *data, size_t size,
		    struct sl_err *err)
{
	struct sl_atomic_file af;
	int rc = sl_atomic_open(&af, path, what, err);
	if (rc)
		return rc;
	if (size && fwrite(data, 1, size, af.f) != size) {
		int e = errno;
		sl_atomic_abort(&af);
		return sl_err_set(err, SL_EIO, "cannot write %s '%s': %s", what, path, strerror(e));
	}
	return sl_atomic_commit(&af, err);
}
