/* The controller's lock on its directories (run_lock.h). */
#include "ctl/run_lock.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The pid the holder wrote, or 0. */
static int holder_pid(int fd)
{
	char buf[32] = {0};
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	return n > 0 ? atoi(buf) : 0;
}

static int alive(int pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

static int lock_one(struct sl_ctl_run_lock *l, int slot, const char *dir, const char *what,
		    double wait_s, struct sl_err *err)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/controller.lock", dir);
	/* no O_CLOEXEC: the generation inherits it (run_lock.h) */
	int fd = open(path, O_RDWR | O_CREAT, 0666);
	if (fd < 0)
		return sl_err_set(err, SL_EIO, "cannot open lock file '%s': %s", path,
				  strerror(errno));
	double t0 = sl_now_s(), deadline = t0 + wait_s;
	int waited = 0;
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno == EINTR)
			continue;
		int e = errno, pid = holder_pid(fd);
		if (e != EWOULDBLOCK) {
			close(fd);
			return sl_err_set(err, SL_EIO, "cannot lock '%s': %s", path, strerror(e));
		}
		if (alive(pid) || sl_now_s() > deadline) {
			close(fd);
			if (alive(pid))
				return sl_err_set(err, SL_EUSAGE,
						  "%s '%s' is in use by sailor control (pid %d): stop "
						  "it first, or give another directory", what, dir, pid);
			return sl_err_set(err, SL_EUSAGE,
					  "%s '%s' is still held by processes of a controller that "
					  "is gone (pid %d) after %.0f s: end them (they hold '%s')",
					  what, dir, pid, wait_s, path);
		}
		/* its controller died; its generation is still stopping (with a checkpoint) */
		l->waited_pid = pid;
		waited = 1;
		usleep(100000);
	}
	if (waited)
		l->waited_s += sl_now_s() - t0;
	char text[32];
	int n = snprintf(text, sizeof(text), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, text, (size_t)n, 0) != n) {
		int e = errno;
		close(fd);
		return sl_err_set(err, SL_EIO, "cannot write lock file '%s': %s", path, strerror(e));
	}
	l->fd[slot] = fd;
	return 0;
}

static int same_dir(const char *a, const char *b)
{
	struct stat sa, sb;
	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int sl_ctl_run_lock_take(struct sl_ctl_run_lock *l, const char *run_dir, const char *ckpt_dir,
			 double wait_s, struct sl_err *err)
{
	memset(l, 0, sizeof(*l));
	l->fd[0] = l->fd[1] = -1;
	int rc = lock_one(l, 0, run_dir, "run directory", wait_s, err);
	if (!rc && ckpt_dir && !same_dir(run_dir, ckpt_dir))
		rc = lock_one(l, 1, ckpt_dir, "checkpoint directory", wait_s, err);
	if (rc)
		sl_ctl_run_lock_release(l);
	return rc;
}

void sl_ctl_run_lock_release(struct sl_ctl_run_lock *l)
{
	for (int i = 0; i < 2; i++) {
		if (l->fd[i] >= 0)
			close(l->fd[i]);
		l->fd[i] = -1;
	}
}

int sl_ctl_wait_no_training(const char *ckpt_dir, double wait_s, double *waited_s,
			    struct sl_err *err)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/training.lock", ckpt_dir);
	if (waited_s)
		*waited_s = 0;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return 0; /* no folder yet: nothing trains there */
	double t0 = sl_now_s();
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno != EINTR && errno != EWOULDBLOCK) {
			close(fd);
			return 0; /* advisory: a file system without flock */
		}
		if (sl_now_s() - t0 > wait_s) {
			close(fd);
			return sl_err_set(err, SL_EUSAGE,
					  "checkpoint directory '%s': a rank of an earlier job still "
					  "trains there after %.0f s (it holds '%s'): end it first",
					  ckpt_dir, wait_s, path);
		}
		usleep(100000);
	}
	if (waited_s)
		*waited_s = sl_now_s() - t0;
	flock(fd, LOCK_UN);
	close(fd);
	return 0;
}
