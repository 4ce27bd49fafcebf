/* Placement: which host of the cluster runs each rank of a role table (plan/roles.h).
 *
 * A replica's TP group shares one host (its ranks talk over NVLink/shared memory every layer),
 * and that host's GPU type and zone are the replica's, as the plan said. Each rank takes one of
 * the host's slots.
 *
 * The rule, deterministic so a generation's layout is reproducible from plan + cluster file:
 * first fit decreasing. Replicas are taken in decreasing TP degree, ties in rank order (stage,
 * then pipeline); each goes to the first host in cluster-file order of its (GPU type, zone) with
 * at least tp free slots. Larger groups first avoids most fragmentation that plain rank-order
 * first fit causes (hosts of 4 and 2 slots, replicas tp 2 then tp 4).
 */
#ifndef SL_PLAN_PLACEMENT_H
#define SL_PLAN_PLACEMENT_H

#include "cluster/catalogue.h"
#include "cluster/cluster_file.h"
#include "plan/roles.h"
#include "util/err.h"

/* Fills table->roles[r].host for every rank: an index into cluster->hosts, or -1 for every rank
 * when cluster is NULL (the whole job runs on this host). Uses roles[].gpu, .zone, .tp and
 * table->replica_first_rank. On error the hosts are left -1 and err names the replica (stage k,
 * pipeline j, its GPU type, zone and tp) and what to change in the cluster file or the plan:
 *   SL_ENOTFOUND    no host of the replica's GPU type in its zone;
 *   SL_EINFEASIBLE  tp larger than every such host's slots; fewer slots of that (GPU type, zone)
 *                   than the plan's ranks there; or slots enough in total but split so that
 *                   no host has tp free ones. */
int sl_placement_assign(struct sl_role_table *table, const struct sl_cluster *cluster,
		   const struct sl_catalogue *cat, struct sl_err *err);

#endif
