/* The cluster file (schema "sailor.cluster/1"): which hosts a distributed job may run on, what
 * GPUs each holds and where it is, and how mpirun reaches them.
 *
 *   {"schema": "sailor.cluster/1",
 *    "hosts": [{"name": "node-a", "address": "10.10.1.2", "gpu": "A100-40",
 *               "zone": "us-central1-a", "slots": 4}, ...],
 *    "launch": {"agent": "/run/sailor-testbed/tb/agent", "mpirun_args": ["--mca", "btl", "self,tcp"]}}
 *
 * "name" identifies a host in messages and in placement; "address" (default: the name) is what
 * mpirun uses to reach it and what the generated hostfile and rankfile contain. "slots" is the
 * number of ranks (one per GPU) the host takes. "launch" and both its fields are optional:
 * "agent" becomes mpirun's plm_rsh_agent (how mpirun starts its daemon on a host: ssh by
 * default, or e.g. a script that enters a network namespace); "mpirun_args" are appended to
 * mpirun's options. docs-cluster.md at the repository root documents the format for users.
 *
 * Invariants after a successful load: 1 <= host_count <= SL_CLUSTER_MAX_HOSTS; names unique;
 * names and addresses 1..SL_CLUSTER_NAME_MAX-1 characters of [A-Za-z0-9._-] (they are written
 * into hostfiles and rankfiles, whose parsers split on blanks, '=' and ':'); gpu and zone valid
 * catalogue indices; 1 <= slots <= SL_CLUSTER_MAX_SLOTS; agent non-empty when set; mpirun_args
 * never contain the options the launcher itself decides (-np, --hostfile, --rankfile, --host).
 *
 * Ownership: sl_cluster_load / sl_cluster_from_json allocate hosts, agent and mpirun_args;
 * sl_cluster_free releases them (and is safe on a zeroed or failed-to-load cluster).
 */
#ifndef SL_CLUSTER_CLUSTER_FILE_H
#define SL_CLUSTER_CLUSTER_FILE_H

#include <jansson.h>

#include "cluster/catalogue.h"
#include "util/err.h"

#define SL_CLUSTER_SCHEMA "sailor.cluster/1"
#define SL_CLUSTER_MAX_HOSTS 4096
#define SL_CLUSTER_MAX_SLOTS 1024
#define SL_CLUSTER_NAME_MAX 254 /* a DNS name is at most 253 characters */
#define SL_CLUSTER_PATH_MAX 512

struct sl_host {
	char name[SL_CLUSTER_NAME_MAX];
	char address[SL_CLUSTER_NAME_MAX]; /* = name when the file gives none */
	int gpu;                           /* catalogue GPU index */
	int zone;                          /* catalogue zone index */
	int slots;                         /* ranks it takes */
};

struct sl_cluster {
	char path[SL_CLUSTER_PATH_MAX];    /* the file it was read from, "" if built in memory */
	int host_count;
	struct sl_host *hosts;             /* host_count entries, in file order */
	char *agent;                       /* plm_rsh_agent, NULL = mpirun's default (ssh) */
	char **mpirun_args;                /* mpirun_arg_count strings, NULL when none */
	int mpirun_arg_count;
};

/* Reads and validates a cluster file. Every error names the file and the JSON path, quotes the
 * bad value and says what to write instead. out is overwritten (need not be initialised). */
int sl_cluster_load(const char *path, const struct sl_catalogue *cat, struct sl_cluster *out,
		    struct sl_err *err);

/* The same from parsed JSON; path (may be NULL) is only used in messages and copied to
 * out->path. This is the entry point a fuzz target drives. */
int sl_cluster_from_json(const json_t *root, const char *path, const struct sl_catalogue *cat,
			 struct sl_cluster *out, struct sl_err *err);

/* Frees what the loader allocated and zeroes the cluster. */
void sl_cluster_free(struct sl_cluster *cluster);

/* Total slots of hosts with this GPU type in this zone. */
long long sl_cluster_slots(const struct sl_cluster *cluster, int gpu, int zone);

#endif
