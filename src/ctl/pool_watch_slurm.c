/* Slurm as the controller's pool source (pool_watch.h).
 *
 * Why polling `scontrol show node` and not a subscription: Slurm offers no event stream to a
 * job's owner. strigger(1) runs a program on the slurmctld host when a node goes down or is
 * drained, but only for SlurmUser/root, one-shot unless re-armed, and it says nothing of a node
 * resumed; libslurm's slurm_load_node() is what scontrol calls, with an ABI that changes every
 * release. One scontrol call is a single RPC answered from slurmctld's memory (a few ms for a
 * partition of a few hundred nodes), so a poll every SL_CTL_SLURM_POLL_S sees a drain within
 * half a second at negligible load.
 *
 * Invariants: usable[h] is the state of cluster host h at the last successful poll; a poll that
 * fails keeps the previous pool and usable set and is reported once until one succeeds. */
#include "ctl/pool_watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_file.h"
#include "cluster/slurm.h"

struct sl_ctl_slurm_source {
	char partition[128];
	int has_partition;
	const struct sl_cluster *cluster;
	unsigned char *usable;        /* per cluster host */
	struct sl_slurm_nodes nodes;  /* the last successful poll */
	double last_s;
	int error_reported;
	char change[512];             /* what the last change was, e.g. "fa1 IDLE -> IDLE+DRAIN" */
};

/* usable flags and pool from nodes, matched to the cluster's hosts by name */
static void apply(struct sl_ctl_slurm_source *s, const struct sl_slurm_nodes *nodes,
		  unsigned char *usable, struct sl_pool *pool)
{
	memset(pool, 0, sizeof(*pool));
	for (int h = 0; h < s->cluster->host_count; h++) {
		const struct sl_host *host = &s->cluster->hosts[h];
		usable[h] = 0;
		for (int i = 0; i < nodes->count; i++)
			if (!strcmp(nodes->nodes[i].name, host->name))
				usable[h] = (unsigned char)nodes->nodes[i].usable;
		if (usable[h])
			pool->counts[host->gpu][host->zone] += host->slots;
	}
}

static json_t *cluster_json_of(const struct sl_cluster *cluster, const struct sl_catalogue *cat,
			       const char *partition)
{
	json_t *root = json_object();
	json_object_set_new(root, "schema", json_string(SL_CLUSTER_SCHEMA));
	char note[256];
	snprintf(note, sizeof(note), "the nodes of Slurm %s%s%s (sailor control --slurm)",
		 partition ? "partition '" : "cluster", partition ? partition : "",
		 partition ? "'" : "");
	json_object_set_new(root, "note", json_string(note));
	json_t *hosts = json_array();
	for (int h = 0; h < cluster->host_count; h++) {
		const struct sl_host *x = &cluster->hosts[h];
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(x->name));
		json_object_set_new(o, "address", json_string(x->address));
		json_object_set_new(o, "gpu", json_string(cat->gpus[x->gpu].name));
		json_object_set_new(o, "zone", json_string(cat->zones[x->zone].name));
		json_object_set_new(o, "slots", json_integer(x->slots));
		json_array_append_new(hosts, o);
	}
	json_object_set_new(root, "hosts", hosts);
	return root;
}

int sl_ctl_pool_watch_init_slurm(struct sl_ctl_pool_watch *w, const char *partition,
				 const struct sl_catalogue *cat, struct sl_cluster *cluster,
				 json_t **cluster_json, double now_s, struct sl_err *err)
{
	memset(w, 0, sizeof(*w));
	w->cat = cat;
	w->start_s = now_s;
	w->time_scale = 1.0;
	struct sl_ctl_slurm_source *s = calloc(1, sizeof(*s));
	if (!s)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	w->slurm = s;
	if (partition) {
		snprintf(s->partition, sizeof(s->partition), "%s", partition);
		s->has_partition = 1;
	}
	int rc = sl_slurm_query(partition, &s->nodes, err);
	if (!rc)
		rc = sl_slurm_to_cluster(&s->nodes, cat, cluster, err);
	if (rc)
		return rc;
	s->cluster = cluster;
	s->usable = calloc((size_t)cluster->host_count, 1);
	*cluster_json = cluster_json_of(cluster, cat, partition);
	if (!s->usable || !*cluster_json)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	apply(s, &s->nodes, s->usable, &w->current);
	s->last_s = now_s;
	return 0;
}

int sl_ctl_pool_watch_poll_slurm(struct sl_ctl_pool_watch *w, double now_s, struct sl_err *err)
{
	struct sl_ctl_slurm_source *s = w->slurm;
	if (now_s - s->last_s < SL_CTL_SLURM_POLL_S)
		return 0;
	s->last_s = now_s;
	struct sl_slurm_nodes nodes;
	struct sl_err e = {0};
	if (sl_slurm_query(s->has_partition ? s->partition : NULL, &nodes, &e)) {
		if (s->error_reported)
			return 0;
		s->error_reported = 1;
		return sl_err_set(err, SL_EIO, "%s (keeping the previous pool until Slurm answers)",
				  e.msg);
	}
	s->error_reported = 0;
	unsigned char *usable = calloc((size_t)s->cluster->host_count + 1, 1);
	if (!usable) {
		sl_slurm_nodes_free(&nodes);
		return 0;
	}
	struct sl_pool pool;
	apply(s, &nodes, usable, &pool);
	int changed = memcmp(usable, s->usable, (size_t)s->cluster->host_count) != 0 ||
		      memcmp(pool.counts, w->current.counts, sizeof(pool.counts)) != 0;
	if (changed) {
		/* say which nodes changed, with their states before and after */
		s->change[0] = 0;
		size_t len = 0;
		for (int h = 0; h < s->cluster->host_count; h++) {
			if (usable[h] == s->usable[h])
				continue;
			const char *before = "?", *after = "?";
			for (int i = 0; i < s->nodes.count; i++)
				if (!strcmp(s->nodes.nodes[i].name, s->cluster->hosts[h].name))
					before = s->nodes.nodes[i].state;
			for (int i = 0; i < nodes.count; i++)
				if (!strcmp(nodes.nodes[i].name, s->cluster->hosts[h].name))
					after = nodes.nodes[i].state;
			if (len < sizeof(s->change))
				len += (size_t)snprintf(s->change + len, sizeof(s->change) - len,
							"%s%s %s -> %s", len ? ", " : "",
							s->cluster->hosts[h].name, before, after);
		}
		memcpy(s->usable, usable, (size_t)s->cluster->host_count);
		w->current = pool;
	}
	free(usable);
	sl_slurm_nodes_free(&s->nodes);
	s->nodes = nodes;
	return changed;
}

void sl_ctl_pool_watch_describe_slurm(const struct sl_ctl_pool_watch *w, char *buf, size_t size)
{
	const struct sl_ctl_slurm_source *s = w->slurm;
	char line[1024];
	sl_slurm_describe(&s->nodes, line, sizeof(line));
	snprintf(buf, size, "slurm %s%s%s", line, s->change[0] ? "; changed: " : "", s->change);
}

void sl_ctl_pool_watch_free_slurm(struct sl_ctl_pool_watch *w)
{
	if (!w->slurm)
		return;
	sl_slurm_nodes_free(&w->slurm->nodes);
	free(w->slurm->usable);
	free(w->slurm);
	w->slurm = NULL;
}

int sl_ctl_pool_watch_host_usable(const struct sl_ctl_pool_watch *w, int h)
{
	if (!w->slurm)
		return 1;
	return h >= 0 && h < w->slurm->cluster->host_count && w->slurm->usable[h];
}

int sl_ctl_pool_watch_hosts_lost(const struct sl_ctl_pool_watch *w, const int *rank_host, int n)
{
	for (int r = 0; w->slurm && rank_host && r < n; r++)
		if (!sl_ctl_pool_watch_host_usable(w, rank_host[r]))
			return 1;
	return 0;
}

const char *sl_ctl_pool_watch_host_state(const struct sl_ctl_pool_watch *w, int h)
{
	if (!w->slurm || h < 0 || h >= w->slurm->cluster->host_count)
		return "";
	const struct sl_slurm_nodes *nodes = &w->slurm->nodes;
	for (int i = 0; i < nodes->count; i++)
		if (!strcmp(nodes->nodes[i].name, w->slurm->cluster->hosts[h].name))
			return nodes->nodes[i].state;
	return "";
}

void sl_ctl_pool_watch_refresh(struct sl_ctl_pool_watch *w)
{
	if (w->slurm)
		w->slurm->last_s = -1e9;
}
