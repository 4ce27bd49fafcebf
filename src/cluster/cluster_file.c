/* Cluster files (sailor.cluster/1): parsing and validation; see cluster_file.h for the format
 * and its invariants. Every message starts "cluster file '<path>': <json path>: " so the user
 * can find the line to fix; the reason follows, then what would be valid. */
#include "cluster/cluster_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

/* Options mpirun would take from both us and the file; the launcher sets them from the placement,
 * so a second copy would silently contradict (or, for -np, break) the plan's layout. */
static const char *const reserved_args[] = {
	"-np", "--np", "-n", "-c", "--n", "-hostfile", "--hostfile", "-machinefile",
	"--machinefile", "-rankfile", "--rankfile", "-rf", "-host", "--host", "-H", NULL,
};

static int name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.';
}

/* Host names and addresses go verbatim into hostfiles ("<addr> slots=N") and rankfiles
 * ("rank R=<addr> slot=..."), whose parsers split on blanks, '=', ':' and '@', so anything
 * outside [A-Za-z0-9._-] would be misread rather than rejected by OpenMPI. */
static int check_name(const char *value, const char *ctx, const char *what, struct sl_err *err)
{
	size_t len = strlen(value);
	if (len == 0)
		return sl_err_set(err, SL_EINPUT, "%s: empty %s; give the host's %s", ctx, what, what);
	if (len >= SL_CLUSTER_NAME_MAX)
		return sl_err_set(err, SL_EINPUT, "%s: %s '%.40s...' is %zu characters; at most %d "
				  "are allowed", ctx, what, value, len, SL_CLUSTER_NAME_MAX - 1);
	for (size_t i = 0; i < len; i++)
		if (!name_char_ok(value[i])) {
			const char *hint = value[i] == ':' ?
				" (IPv6 addresses cannot be written into an OpenMPI rankfile: use a "
				"host name or an IPv4 address)" : "";
			return sl_err_set(err, SL_EINPUT, "%s: %s '%s' has the character '%c' at "
					  "position %zu; use only letters, digits, '-', '_' and "
					  "'.'%s", ctx, what, value, value[i], i + 1, hint);
		}
	return 0;
}

static int parse_host(const json_t *e, const char *ctx, const struct sl_catalogue *cat,
		      struct sl_host *host, struct sl_err *err)
{
	static const char *const known[] = {"name", "address", "gpu", "zone", "slots", NULL};
	if (!json_is_object(e))
		return sl_err_set(err, SL_EINPUT, "%s: expected an object like {\"name\": \"node-a\", "
				  "\"gpu\": \"A100-40\", \"zone\": \"us-central1-a\", \"slots\": 4}",
				  ctx);
	/* an unknown key is most likely a typo ("slot", "adress") whose value would be ignored */
	const char *key;
	json_t *value;
	json_object_foreach((json_t *)e, key, value) {
		int ok = 0;
		for (int i = 0; known[i]; i++)
			ok |= !strcmp(key, known[i]);
		if (!ok)
			return sl_err_set(err, SL_EINPUT, "%s: unknown field '%s'; a host has name, "
					  "address, gpu, zone and slots", ctx, key);
	}
	const char *name = NULL, *address = NULL, *gpu = NULL, *zone = NULL;
	long long slots = 0;
	char where[96], names[1024];
	int rc = sl_json_get_string(e, ctx, "name", &name, err);
	if (!rc) {
		snprintf(where, sizeof(where), "%s.name", ctx);
		rc = strlen(name) != json_string_length(json_object_get(e, "name")) ?
			sl_err_set(err, SL_EINPUT, "%s: contains a NUL character", where) :
			check_name(name, where, "host name", err);
	}
	if (!rc && json_object_get(e, "address") && !json_is_null(json_object_get(e, "address"))) {
		rc = sl_json_get_string(e, ctx, "address", &address, err);
		snprintf(where, sizeof(where), "%s.address", ctx);
		if (!rc)
			rc = strlen(address) != json_string_length(json_object_get(e, "address")) ?
				sl_err_set(err, SL_EINPUT, "%s: contains a NUL character", where) :
				check_name(address, where, "address", err);
	}
	if (!rc) rc = sl_json_get_string(e, ctx, "gpu", &gpu, err);
	if (!rc) rc = sl_json_get_string(e, ctx, "zone", &zone, err);
	if (!rc) rc = sl_json_get_int(e, ctx, "slots", &slots, err);
	if (rc)
		return rc;
	host->gpu = sl_catalogue_gpu_index(cat, gpu);
	host->zone = sl_catalogue_zone_index(cat, zone);
	if (host->gpu < 0)
		return sl_err_set(err, SL_ENOTFOUND, "%s.gpu: unknown GPU type '%s'; known types: %s",
				  ctx, gpu, sl_catalogue_gpu_names(cat, names, sizeof(names)));
	if (host->zone < 0)
		return sl_err_set(err, SL_ENOTFOUND, "%s.zone: unknown zone '%s'; nearest zones: %s "
				  "(every zone in data/zones/*.json, more with the file's \"zones\")", ctx,
				  zone, sl_catalogue_zone_suggest(cat, zone, names, sizeof(names)));
	if (slots < 1 || slots > SL_CLUSTER_MAX_SLOTS)
		return sl_err_set(err, SL_EINPUT, "%s.slots: %lld is out of range; give the number of "
				  "GPUs (ranks) the host takes, 1 to %d", ctx, slots,
				  SL_CLUSTER_MAX_SLOTS);
	snprintf(host->name, sizeof(host->name), "%s", name);
	snprintf(host->address, sizeof(host->address), "%s", address ? address : name);
	host->slots = (int)slots;
	return 0;
}

static int parse_launch(const json_t *launch, const char *ctx, struct sl_cluster *out,
			struct sl_err *err)
{
	if (!json_is_object(launch))
		return sl_err_set(err, SL_EINPUT, "%s: expected an object like {\"agent\": \"ssh\", "
				  "\"mpirun_args\": [...]}", ctx);
	const char *key;
	json_t *value;
	json_object_foreach((json_t *)launch, key, value) {
		if (strcmp(key, "agent") && strcmp(key, "mpirun_args"))
			return sl_err_set(err, SL_EINPUT, "%s: unknown field '%s'; launch has agent and "
					  "mpirun_args", ctx, key);
	}
	json_t *agent = json_object_get(launch, "agent");
	if (agent && !json_is_null(agent)) {
		if (!json_is_string(agent) || !json_string_length(agent))
			return sl_err_set(err, SL_EINPUT, "%s.agent: expected a non-empty string, the "
					  "command mpirun runs to reach a host (e.g. \"ssh\")", ctx);
		if (strlen(json_string_value(agent)) != json_string_length(agent))
			return sl_err_set(err, SL_EINPUT, "%s.agent: contains a NUL character", ctx);
		out->agent = strdup(json_string_value(agent));
		if (!out->agent)
			return sl_err_set(err, SL_ENOMEM, "%s.agent: out of memory", ctx);
	}
	json_t *args = json_object_get(launch, "mpirun_args");
	if (!args || json_is_null(args))
		return 0;
	if (!json_is_array(args))
		return sl_err_set(err, SL_EINPUT, "%s.mpirun_args: expected an array of strings, one "
				  "per argument, e.g. [\"--mca\", \"btl\", \"self,tcp\"]", ctx);
	size_t n = json_array_size(args);
	if (n > 1024)
		return sl_err_set(err, SL_EINPUT, "%s.mpirun_args: %zu arguments; at most 1024", ctx, n);
	out->mpirun_args = calloc(n + 1, sizeof(char *));
	if (!out->mpirun_args)
		return sl_err_set(err, SL_ENOMEM, "%s.mpirun_args: out of memory", ctx);
	for (size_t i = 0; i < n; i++) {
		json_t *a = json_array_get(args, i);
		if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a))
			return sl_err_set(err, SL_EINPUT, "%s.mpirun_args[%zu]: expected a string", ctx,
					  i);
		const char *s = json_string_value(a);
		for (int r = 0; reserved_args[r]; r++)
			if (!strcmp(s, reserved_args[r]))
				return sl_err_set(err, SL_EINPUT, "%s.mpirun_args[%zu]: '%s' is set by "
						  "sailor from the plan's placement; remove it", ctx, i,
						  s);
		out->mpirun_args[i] = strdup(s);
		if (!out->mpirun_args[i])
			return sl_err_set(err, SL_ENOMEM, "%s.mpirun_args: out of memory", ctx);
		out->mpirun_arg_count = (int)i + 1;
	}
	return 0;
}

static int cmp_host_name(const void *a, const void *b)
{
	const struct sl_host *x = *(const struct sl_host *const *)a;
	const struct sl_host *y = *(const struct sl_host *const *)b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x < y ? -1 : x > y);
}

static int parse(const json_t *root, const struct sl_catalogue *cat, struct sl_cluster *out,
		 struct sl_err *err)
{
	if (!json_is_object(root))
		return sl_err_set(err, SL_EINPUT, "top level: expected an object {\"schema\": \"%s\", "
				  "\"hosts\": [...]}", SL_CLUSTER_SCHEMA);
	json_t *schema = json_object_get(root, "schema");
	if (!schema || !json_is_string(schema) || strcmp(json_string_value(schema),
							   SL_CLUSTER_SCHEMA)) {
		char shown[64] = "missing";
		if (schema && json_is_string(schema))
			snprintf(shown, sizeof(shown), "'%s'", json_string_value(schema));
		else if (schema)
			snprintf(shown, sizeof(shown), "not a string");
		return sl_err_set(err, SL_EINPUT, "schema: %s; expected \"%s\"", shown,
				  SL_CLUSTER_SCHEMA);
	}
	const char *key;
	json_t *value;
	json_object_foreach((json_t *)root, key, value) {
		if (strcmp(key, "schema") && strcmp(key, "hosts") && strcmp(key, "launch") &&
		    strcmp(key, "note") && strcmp(key, "zones"))
			return sl_err_set(err, SL_EINPUT, "unknown top-level field '%s'; a cluster file "
					  "has schema, hosts, launch (and an optional note and zones)",
					  key);
	}
	json_t *hosts = NULL;
	int rc = sl_json_get_array(root, "", "hosts", &hosts, err);
	if (rc)
		return rc;
	size_t n = json_array_size(hosts);
	if (n == 0)
		return sl_err_set(err, SL_EINPUT, "hosts: empty; list at least one host");
	if (n > SL_CLUSTER_MAX_HOSTS)
		return sl_err_set(err, SL_EINPUT, "hosts: %zu hosts; at most %d are supported", n,
				  SL_CLUSTER_MAX_HOSTS);
	out->hosts = calloc(n, sizeof(*out->hosts));
	if (!out->hosts)
		return sl_err_set(err, SL_ENOMEM, "hosts: out of memory");
	for (size_t i = 0; i < n; i++) {
		char ctx[32];
		snprintf(ctx, sizeof(ctx), "hosts[%zu]", i);
		rc = parse_host(json_array_get(hosts, i), ctx, cat, &out->hosts[i], err);
		if (rc)
			return rc;
		out->host_count = (int)i + 1;
	}
	/* duplicate names: sorted so 4096 hosts cost n log n; ties keep file order, so the message
	 * names the first host with that name and the first repeat of it */
	const struct sl_host **sorted = malloc((size_t)out->host_count * sizeof(*sorted));
	if (!sorted)
		return sl_err_set(err, SL_ENOMEM, "hosts: out of memory");
	for (int i = 0; i < out->host_count; i++)
		sorted[i] = &out->hosts[i];
	qsort(sorted, (size_t)out->host_count, sizeof(*sorted), cmp_host_name);
	long first = -1, second = -1;
	for (int i = 1; i < out->host_count; i++)
		if (!strcmp(sorted[i]->name, sorted[i - 1]->name) &&
		    (second < 0 || sorted[i] - out->hosts < second)) {
			second = sorted[i] - out->hosts;
			int k = i - 1; /* the first of this name in file order */
			while (k > 0 && !strcmp(sorted[k - 1]->name, sorted[i]->name))
				k--;
			first = sorted[k] - out->hosts;
		}
	free(sorted);
	if (second >= 0)
		return sl_err_set(err, SL_EINPUT, "hosts[%ld].name: '%s' is already the name of "
				  "hosts[%ld]; host names must be unique", second,
				  out->hosts[second].name, first);
	json_t *launch = json_object_get(root, "launch");
	if (launch && !json_is_null(launch))
		return parse_launch(launch, "launch", out, err);
	return 0;
}

int sl_cluster_from_json(const json_t *root, const char *path, const struct sl_catalogue *cat,
			 struct sl_cluster *out, struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	if (path)
		snprintf(out->path, sizeof(out->path), "%s", path);
	int rc = parse(root, cat, out, err);
	if (rc) {
		if (path)
			sl_err_prefix(err, "cluster file '%s'", path);
		else
			sl_err_prefix(err, "cluster file");
		sl_cluster_free(out);
		if (path)
			snprintf(out->path, sizeof(out->path), "%s", path);
	}
	return rc;
}

int sl_cluster_load(const char *path, const struct sl_catalogue *cat, struct sl_cluster *out,
		    struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	json_t *root = sl_json_load_file(path, "cluster file", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int rc = sl_cluster_from_json(root, path, cat, out, err);
	json_decref(root);
	return rc;
}

void sl_cluster_free(struct sl_cluster *cluster)
{
	if (!cluster)
		return;
	free(cluster->hosts);
	free(cluster->agent);
	if (cluster->mpirun_args)
		for (int i = 0; cluster->mpirun_args[i]; i++)
			free(cluster->mpirun_args[i]);
	free(cluster->mpirun_args);
	memset(cluster, 0, sizeof(*cluster));
}

long long sl_cluster_slots(const struct sl_cluster *cluster, int gpu, int zone)
{
	long long total = 0;
	for (int i = 0; i < cluster->host_count; i++)
		if (cluster->hosts[i].gpu == gpu && cluster->hosts[i].zone == zone)
			total += cluster->hosts[i].slots;
	return total;
}
