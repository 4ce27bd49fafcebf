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
 * The node set is Slurm's, not the start's: a node seen for the first time (a dynamic node,
 * `slurmd -Z`, or one added to slurm.conf) joins the cluster at the poll that sees it;
 * one that leaves Slurm (`scontrol delete`) is no longer usable; a node whose description
 * changed (features, Gres) is described anew. A node sailor cannot use as Slurm describes it
 * (sl_slurm_node_host: no GPU-type or zone feature, GPUs beyond its CPUs) is kept out of the
 * pool with one message, reported once for as long as its message stays the same.
 *
 * Invariants: the cluster only grows, so a host's index never changes (the controller's host
 * table, rank placements and probes hold indices); cluster_json's hosts are the cluster's, in
 * the same order; usable[h] is the state of cluster host h at the last successful poll (0 for a
 * node gone or not usable by sailor); a poll that fails keeps the previous pool and usable set
 * and is reported once until one succeeds. */
#include "ctl/pool_watch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_file.h"
#include "cluster/slurm.h"
#include "util/log.h"

/* A node sailor cannot use, and why (sl_slurm_node_host's message). */
struct node_problem {
	char name[SL_CLUSTER_NAME_MAX];
	char msg[SL_ERR_MSG_MAX];
};

struct problem_list {
	int count, cap;
	struct node_problem *items;
};

struct sl_ctl_slurm_source {
	char partition[128];
	int has_partition;
	const struct sl_catalogue *cat;
	struct sl_cluster *cluster;   /* grows: room for SL_CLUSTER_MAX_HOSTS hosts */
	json_t *cluster_json;         /* borrowed: the caller owns it */
	unsigned char *usable;        /* per cluster host, SL_CLUSTER_MAX_HOSTS */
	struct sl_slurm_nodes nodes;  /* the last successful poll */
	double last_s;
	int error_reported;
	char change[512];             /* what the last change was, e.g. "fa1 IDLE -> IDLE+DRAIN" */
	struct problem_list rejected; /* the nodes kept out at the last poll, with why */
	struct problem_list pending;  /* their messages not yet taken (a new node or message) */
};

static int problem_add(struct problem_list *l, const char *name, const char *msg)
{
	if (l->count == l->cap) {
		int cap = l->cap ? 2 * l->cap : 8;
		struct node_problem *grown = realloc(l->items, (size_t)cap * sizeof(*grown));
		if (!grown)
			return SL_ENOMEM;
		l->items = grown;
		l->cap = cap;
	}
	struct node_problem *p = &l->items[l->count++];
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->msg, sizeof(p->msg), "%s", msg);
	return 0;
}

static int problem_known(const struct problem_list *l, const char *name, const char *msg)
{
	for (int i = 0; i < l->count; i++)
		if (!strcmp(l->items[i].name, name) && !strcmp(l->items[i].msg, msg))
			return 1;
	return 0;
}

static json_t *host_json(const struct sl_host *x, const struct sl_catalogue *cat)
{
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(x->name));
	json_object_set_new(o, "address", json_string(x->address));
	json_object_set_new(o, "gpu", json_string(cat->gpus[x->gpu].name));
	json_object_set_new(o, "zone", json_string(cat->zones[x->zone].name));
	json_object_set_new(o, "slots", json_integer(x->slots));
	return o;
}

static int same_host(const struct sl_host *a, const struct sl_host *b)
{
	return a->gpu == b->gpu && a->zone == b->zone && a->slots == b->slots &&
	       !strcmp(a->address, b->address);
}

static void note_change(struct sl_ctl_slurm_source *s, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note_change(struct sl_ctl_slurm_source *s, size_t *len, const char *fmt, ...)
{
	if (*len + 2 >= sizeof(s->change))
		return;
	if (*len)
		*len += (size_t)snprintf(s->change + *len, sizeof(s->change) - *len, ", ");
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(s->change + *len, sizeof(s->change) - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n < sizeof(s->change) - *len ? (size_t)n : sizeof(s->change) - *len - 1;
}

/* Node n as cluster host: its index, the host appended (a node seen for the first time) or
 * described anew (its features or Gres changed); -1 with *problem set when sailor cannot use
 * it. Returns 1 when a host was described anew. */
static int node_to_host(struct sl_ctl_slurm_source *s, const struct sl_slurm_node *n, int *index,
			struct sl_err *problem, size_t *len)
{
	struct sl_host host;
	*index = -1;
	if (sl_slurm_node_host(n, s->cat, &host, problem))
		return 0;
	struct sl_cluster *c = s->cluster;
	json_t *hosts = json_object_get(s->cluster_json, "hosts");
	for (int h = 0; h < c->host_count; h++) {
		if (strcmp(c->hosts[h].name, n->name))
			continue;
		*index = h;
		if (same_host(&c->hosts[h], &host))
			return 0;
		c->hosts[h] = host;
		json_array_set_new(hosts, (size_t)h, host_json(&host, s->cat));
		note_change(s, len, "%s now %s in %s, %d GPUs", n->name, s->cat->gpus[host.gpu].name,
			    s->cat->zones[host.zone].name, host.slots);
		return 1;
	}
	if (c->host_count == SL_CLUSTER_MAX_HOSTS) {
		sl_err_set(problem, SL_EINPUT, "slurm: node '%s': the controller already has %d "
			   "hosts, its most; give it a partition of fewer nodes (--partition)",
			   n->name, SL_CLUSTER_MAX_HOSTS);
		return 0;
	}
	/* a new host: a change once it is usable (note_usable_changes) */
	*index = c->host_count;
	c->hosts[c->host_count++] = host;
	json_array_append_new(hosts, host_json(&host, s->cat));
	return 0;
}

/* Matches nodes to the cluster (node_to_host): usable flags and pool, the cluster grown, the
 * nodes sailor cannot use kept out and their new messages queued. Returns 1 when a host was
 * described anew. */
static int merge_nodes(struct sl_ctl_slurm_source *s, const struct sl_slurm_nodes *nodes,
		       unsigned char *usable, struct sl_pool *pool, size_t *len)
{
	int changed = 0;
	struct problem_list rejected = {0};
	memset(pool, 0, sizeof(*pool));
	memset(usable, 0, SL_CLUSTER_MAX_HOSTS);
	for (int i = 0; i < nodes->count; i++) {
		const struct sl_slurm_node *n = &nodes->nodes[i];
		struct sl_err problem = {0};
		int h;
		changed |= node_to_host(s, n, &h, &problem, len);
		if (h < 0) {
			if (!problem_known(&s->rejected, n->name, problem.msg))
				problem_add(&s->pending, n->name, problem.msg);
			problem_add(&rejected, n->name, problem.msg);
			continue;
		}
		usable[h] = (unsigned char)n->usable;
		if (usable[h])
			pool->counts[s->cluster->hosts[h].gpu][s->cluster->hosts[h].zone] +=
				s->cluster->hosts[h].slots;
	}
	free(s->rejected.items);
	s->rejected = rejected;
	return changed;
}

static json_t *cluster_json_of(const char *partition)
{
	json_t *root = json_object();
	json_object_set_new(root, "schema", json_string(SL_CLUSTER_SCHEMA));
	char note[256];
	snprintf(note, sizeof(note), "the nodes of Slurm %s%s%s (sailor control --slurm)",
		 partition ? "partition '" : "cluster", partition ? partition : "",
		 partition ? "'" : "");
	json_object_set_new(root, "note", json_string(note));
	json_object_set_new(root, "hosts", json_array());
	return root;
}

/* No node of Slurm's is one sailor can use: each one's message on stderr, the first as the
 * error. */
static int no_usable_node(struct sl_ctl_slurm_source *s, struct sl_err *err)
{
	for (int i = 0; i < s->pending.count; i++)
		sl_log_warn("%s", s->pending.items[i].msg);
	return sl_err_set(err, SL_EINPUT, "slurm: sailor can use none of the %d node%s of %s "
			  "(each one's problem is above); %s", s->nodes.count,
			  s->nodes.count == 1 ? "" : "s", s->cluster->path,
			  s->pending.count ? s->pending.items[0].msg : "");
}

int sl_ctl_pool_watch_init_slurm(struct sl_ctl_pool_watch *w, const char *partition,
				 const struct sl_catalogue *cat, struct sl_cluster *cluster,
				 json_t **cluster_json, double now_s, struct sl_err *err)
{
	memset(w, 0, sizeof(*w));
	memset(cluster, 0, sizeof(*cluster));
	w->cat = cat;
	w->start_s = now_s;
	w->time_scale = 1.0;
	struct sl_ctl_slurm_source *s = calloc(1, sizeof(*s));
	if (!s)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	w->slurm = s;
	s->cat = cat;
	if (partition) {
		snprintf(s->partition, sizeof(s->partition), "%s", partition);
		s->has_partition = 1;
	}
	int rc = sl_slurm_query(partition, &s->nodes, err);
	if (rc)
		return rc;
	sl_slurm_cluster_name(&s->nodes, cluster);
	cluster->hosts = calloc(SL_CLUSTER_MAX_HOSTS, sizeof(*cluster->hosts));
	s->cluster = cluster;
	s->usable = calloc(SL_CLUSTER_MAX_HOSTS, 1);
	*cluster_json = s->cluster_json = cluster_json_of(partition);
	if (!cluster->hosts || !s->usable || !*cluster_json)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	size_t len = 0;
	merge_nodes(s, &s->nodes, s->usable, &w->current, &len);
	if (cluster->host_count == 0)
		return no_usable_node(s, err);
	s->last_s = now_s;
	return 0;
}

/* Node name's state in nodes, NULL when it is not there. */
static const char *state_in(const struct sl_slurm_nodes *nodes, const char *name)
{
	for (int i = 0; i < nodes->count; i++)
		if (!strcmp(nodes->nodes[i].name, name))
			return nodes->nodes[i].state;
	return NULL;
}

/* Notes "fa1 IDLE -> IDLE+DRAIN", "dy0 (new) -> IDLE", "dy1 IDLE+DRAIN -> (gone)", "dx0 IDLE ->
 * IDLE (left out)" for each host whose usable flag changed or that joined or left Slurm since
 * the last poll; returns how many. */
static int note_host_changes(struct sl_ctl_slurm_source *s, const struct sl_slurm_nodes *nodes,
			     const unsigned char *usable, size_t *len)
{
	int n = 0;
	for (int h = 0; h < s->cluster->host_count; h++) {
		const char *name = s->cluster->hosts[h].name;
		const char *before = state_in(&s->nodes, name), *after = state_in(nodes, name);
		if (usable[h] == s->usable[h] && !before == !after)
			continue;
		int left_out = 0;
		for (int i = 0; i < s->rejected.count; i++)
			left_out |= !strcmp(s->rejected.items[i].name, name);
		note_change(s, len, "%s %s -> %s%s", name, before ? before : "(new)",
			    after ? after : "(gone)", left_out ? " (left out)" : "");
		n++;
	}
	return n;
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
	unsigned char *usable = calloc(SL_CLUSTER_MAX_HOSTS, 1);
	if (!usable) {
		sl_slurm_nodes_free(&nodes);
		return 0;
	}
	char before[sizeof(s->change)];
	memcpy(before, s->change, sizeof(before));
	s->change[0] = 0;
	size_t len = 0;
	struct sl_pool pool;
	int changed = merge_nodes(s, &nodes, usable, &pool, &len);
	changed += note_host_changes(s, &nodes, usable, &len);
	changed |= memcmp(pool.counts, w->current.counts, sizeof(pool.counts)) != 0;
	if (changed) {
		memcpy(s->usable, usable, (size_t)s->cluster->host_count);
		w->current = pool;
	} else {
		memcpy(s->change, before, sizeof(before)); /* the last change stays the one shown */
	}
	free(usable);
	sl_slurm_nodes_free(&s->nodes);
	s->nodes = nodes;
	return changed ? 1 : 0;
}

int sl_ctl_pool_watch_node_problem(struct sl_ctl_pool_watch *w, char *node, size_t node_size,
				   char *msg, size_t msg_size)
{
	struct sl_ctl_slurm_source *s = w->slurm;
	if (!s || s->pending.count == 0)
		return 0;
	snprintf(node, node_size, "%s", s->pending.items[0].name);
	snprintf(msg, msg_size, "%s", s->pending.items[0].msg);
	s->pending.count--;
	memmove(s->pending.items, s->pending.items + 1,
		(size_t)s->pending.count * sizeof(*s->pending.items));
	return 1;
}

void sl_ctl_pool_watch_describe_slurm(const struct sl_ctl_pool_watch *w, char *buf, size_t size)
{
	const struct sl_ctl_slurm_source *s = w->slurm;
	char line[1024], rejected[256] = "";
	sl_slurm_describe(&s->nodes, line, sizeof(line));
	size_t len = 0;
	for (int i = 0; i < s->rejected.count && len + 2 < sizeof(rejected); i++) {
		int n = snprintf(rejected + len, sizeof(rejected) - len, "%s%.*s",
				 i ? ", " : "; sailor cannot use: ", 64, s->rejected.items[i].name);
		len = n < 0 ? len : len + (size_t)n;
	}
	snprintf(buf, size, "slurm %s%s%s%s", line, rejected, s->change[0] ? "; changed: " : "",
		 s->change);
}

void sl_ctl_pool_watch_free_slurm(struct sl_ctl_pool_watch *w)
{
	if (!w->slurm)
		return;
	sl_slurm_nodes_free(&w->slurm->nodes);
	free(w->slurm->usable);
	free(w->slurm->rejected.items);
	free(w->slurm->pending.items);
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
