/* Whether a Slurm node is alive, asked of the node itself, and telling Slurm it is not.
 *
 * Why ask the node: Slurm marks a node whose slurmd stopped answering NOT_RESPONDING only after
 * SlurmdTimeout (300 s by default; 10 s on the testbed), and srun gives up on a step on it ~20 s
 * after that. A node whose processes were killed (or whose kernel still runs but whose daemons
 * died) refuses a TCP connection to slurmd's port at once; a host that lost power answers
 * nothing, and the connect runs out its timeout. Either way its slurmd is gone, which is Slurm's
 * own definition of a dead node; a node whose slurmd accepts the connection is alive, whatever
 * happened to a task on it. The connect completes in the kernel (SYN, SYN-ACK), so a slurmd
 * starved of CPU on a loaded host still counts as alive.
 *
 * Telling Slurm: `scontrol update nodename=X state=down reason=...` (needs SlurmUser or root, or
 * an operator's AdminLevel): slurmctld then ends the jobs on the node at once (the steps on its
 * other nodes are cancelled, squeue empties within a second), and allocates the node to no job
 * until a person or Slurm (ReturnToService) resumes it.
 *
 * Errors are values; nothing here keeps state.
 */
#ifndef SL_CLUSTER_SLURM_HEALTH_H
#define SL_CLUSTER_SLURM_HEALTH_H

#include "util/err.h"

#define SL_SLURM_HEALTH_DEFAULT_PORT 6818 /* Slurm's SlurmdPort when slurm.conf gives none */

/* slurmd's port from `scontrol show config` (SlurmdPort). On any failure *port is
 * SL_SLURM_HEALTH_DEFAULT_PORT and the error says why. */
int sl_slurm_health_port(int *port, struct sl_err *err);

/* What a probe of a node's slurmd found. */
#define SL_SLURM_HEALTH_ANSWERS 1   /* the connection was accepted */
#define SL_SLURM_HEALTH_REFUSED 0   /* refused (nothing listens), unreachable, no such address */
#define SL_SLURM_HEALTH_SILENT (-1) /* no answer within the time (lost power, or a lost packet) */

/* Connects to slurmd (port) on each of the n addresses (a node's NodeAddr: name or numeric)
 * at once and waits up to timeout_s in all; found[i] says what came back. Returns SL_EIO when
 * no socket could be made (then every found[i] is ANSWERS: nothing is known). */
int sl_slurm_health_probe(const char *const *addresses, int n, int port, double timeout_s,
			  signed char *found, struct sl_err *err);

/* `scontrol update nodename=node state=down reason=reason`, bounded to 10 s. The error says
 * what scontrol said (e.g. a user without the right to change nodes). */
int sl_slurm_health_mark_down(const char *node, const char *reason, struct sl_err *err);

#endif
