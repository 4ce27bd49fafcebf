/* One controller per run directory and per checkpoint directory: an flock(2) on
 * "<dir>/controller.lock", held for the controller's life, with the holder's pid written in it.
 *
 * Two controllers on one directory would interleave their generations' checkpoints and step
 * records; the second is refused with a message naming the first's pid. The lock dies with its
 * holders (the kernel drops an flock when the last descriptor of it closes), so a controller
 * killed with SIGKILL leaves nothing that blocks the next one. The descriptor is inherited by the
 * generation (the launcher and its ranks): after such a kill the generation still stops itself
 * (SIGTERM, its parent-death signal) and writes its last checkpoint, and the next controller waits
 * for that instead of training beside it.
 *
 * Ownership: the lock owns its descriptors (sl_ctl_run_lock_release, or the process's end).
 */
#ifndef SL_CTL_RUN_LOCK_H
#define SL_CTL_RUN_LOCK_H

#include "util/err.h"

struct sl_ctl_run_lock {
	int fd[2];            /* run directory, checkpoint directory (-1: none) */
	int waited_pid;       /* a dead controller whose generation we waited for (0: none) */
	double waited_s;
};

/* Takes the locks of run_dir and ckpt_dir (the same directory once). When a lock's holder is a
 * live controller: SL_EUSAGE, "run directory '...' is in use by sailor control (pid N)". When
 * the controller that took it is gone but processes it started still hold it: waits up to
 * wait_s for them to end, then SL_EUSAGE naming that pid. */
int sl_ctl_run_lock_take(struct sl_ctl_run_lock *l, const char *run_dir, const char *ckpt_dir,
			 double wait_s, struct sl_err *err);

void sl_ctl_run_lock_release(struct sl_ctl_run_lock *l);

/* Waits (up to wait_s) until no rank trains on ckpt_dir: rank 0 of every `sailor run` holds
 * "<ckpt_dir>/training.lock" shared while it lives (runtime/runner.c), even when the launcher
 * and mpirun that started it are gone. Call before starting a generation. *waited_s (may be
 * NULL): how long it waited. SL_EUSAGE when a rank still trains after wait_s. */
int sl_ctl_wait_no_training(const char *ckpt_dir, double wait_s, double *waited_s,
			    struct sl_err *err);

#endif
