/* Launch: hostfile, rankfile and mpirun argv for a placed role table; see launch.h for the file
 * formats and why they look the way they do (each choice was checked against OpenMPI 4.1.4).
 * Invariant: every string in a struct sl_launch_cmd is its own allocation. */
#include "runtime/launch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A growable, NULL-terminated string vector; on allocation failure it remembers the failure and
 * later pushes do nothing, so building code checks once at the end. */
struct strvec {
	char **items;
	int count, capacity, failed;
};

static void vec_push_owned(struct strvec *v, char *s)
{
	if (!s)
		v->failed = 1;
	if (v->failed) {
		free(s);
		return;
	}
	if (v->count + 2 > v->capacity) {
		int cap = v->capacity ? 2 * v->capacity : 32;
		char **grown = realloc(v->items, (size_t)cap * sizeof(char *));
		if (!grown) {
			v->failed = 1;
			free(s);
			return;
		}
		v->items = grown;
		v->capacity = cap;
	}
	v->items[v->count++] = s;
	v->items[v->count] = NULL;
}

static void vec_push(struct strvec *v, const char *s)
{
	vec_push_owned(v, strdup(s));
}

static void vec_pushf(struct strvec *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vec_pushf(struct strvec *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	vec_push_owned(v, s);
}

static void free_strings(char **items)
{
	if (!items)
		return;
	for (int i = 0; items[i]; i++)
		free(items[i]);
	free(items);
}

/* A growable text buffer, same failure rule as strvec. */
struct text {
	char *buf;
	size_t len, capacity;
	int failed;
};

static void text_addf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_addf(struct text *t, const char *fmt, ...)
{
	if (t->failed)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(t->buf ? t->buf + t->len : NULL,
				  t->buf ? t->capacity - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = 1;
			return;
		}
		if (t->buf && t->len + (size_t)n < t->capacity) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->capacity ? t->capacity : 4096;
		while (cap <= t->len + (size_t)n)
			cap *= 2;
		char *grown = realloc(t->buf, cap);
		if (!grown) {
			t->failed = 1;
			return;
		}
		t->buf = grown;
		t->capacity = cap;
	}
}

static char *text_finish(struct text *t, struct sl_err *err, const char *what)
{
	if (t->failed || !t->buf) {
		free(t->buf);
		sl_err_set(err, SL_ENOMEM, "%s: out of memory", what);
		return NULL;
	}
	return t->buf;
}

/* OpenMPI treats all names of this machine as one node, so two spellings of it in a hostfile
 * are "multiple definitions of the slot count" (tested with localhost + 127.0.0.1). */
static const char *canonical_address(const char *address)
{
	static char self[256];
	static int have_self = -1;
	if (!strcmp(address, "localhost") || !strcmp(address, "127.0.0.1"))
		return "localhost";
	if (have_self < 0) {
		have_self = gethostname(self, sizeof(self) - 1) == 0 && self[0];
		self[sizeof(self) - 1] = '\0';
	}
	return have_self > 0 && !strcmp(address, self) ? "localhost" : address;
}

static int check_placed(const struct sl_role_table *table, const struct sl_cluster *cluster,
			struct sl_err *err)
{
	for (int r = 0; r < table->world_size; r++) {
		int h = table->roles[r].host;
		if (h < 0 || h >= cluster->host_count)
			return sl_err_set(err, SL_EINPUT, "launch: rank %d has no host (host %d of %d); "
					  "run sl_placement_assign with the cluster first", r, h,
					  cluster->host_count);
	}
	return 0;
}

char *sl_launch_format_hostfile(const struct sl_role_table *table,
				const struct sl_cluster *cluster, struct sl_err *err)
{
	if (check_placed(table, cluster, err))
		return NULL;
	/* only hosts that run ranks are listed: mpirun starts a daemon on every hostfile node,
	 * and an idle host that is down would fail the whole launch */
	int n = cluster->host_count;
	char *used = calloc((size_t)n, 1);
	int *owner = malloc((size_t)n * sizeof(int)); /* first host with the same address */
	if (!used || !owner) {
		free(used);
		free(owner);
		sl_err_set(err, SL_ENOMEM, "hostfile: out of memory");
		return NULL;
	}
	for (int r = 0; r < table->world_size; r++)
		used[table->roles[r].host] = 1;
	struct text t = {0};
	text_addf(&t, "# written by sailor from cluster file '%s'; one line per address\n",
		  cluster->path[0] ? cluster->path : "(in memory)");
	for (int h = 0; h < n; h++) {
		owner[h] = h;
		const char *addr = canonical_address(cluster->hosts[h].address);
		for (int e = 0; e < h; e++)
			if (!strcmp(canonical_address(cluster->hosts[e].address), addr)) {
				owner[h] = e;
				break;
			}
	}
	for (int h = 0; h < n; h++) {
		if (owner[h] != h)
			continue;
		long long slots = 0;
		int any = 0;
		for (int e = h; e < n; e++)
			if (owner[e] == h && used[e]) {
				slots += cluster->hosts[e].slots;
				any = 1;
			}
		if (any)
			text_addf(&t, "%s slots=%lld\n", canonical_address(cluster->hosts[h].address),
				  slots);
	}
	free(used);
	free(owner);
	return text_finish(&t, err, "hostfile");
}

char *sl_launch_format_rankfile(const struct sl_role_table *table,
				const struct sl_cluster *cluster, struct sl_err *err)
{
	if (check_placed(table, cluster, err))
		return NULL;
	struct text t = {0};
	text_addf(&t, "# written by sailor: rank -> host; slot=0:* binds to socket 0's cores "
		  "(see src/runtime/launch.h)\n");
	for (int r = 0; r < table->world_size; r++)
		text_addf(&t, "rank %d=%s slot=0:*\n", r,
			  canonical_address(cluster->hosts[table->roles[r].host].address));
	return text_finish(&t, err, "rankfile");
}

/* dir/name written through a temporary in the same directory and renamed over, so a reader
 * sees the old file or the new one, never a part. */
static int write_atomic(const char *dir, const char *name, const char *text, char *path_out,
			struct sl_err *err)
{
	char path[SL_LAUNCH_PATH_MAX], tmp[SL_LAUNCH_PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >= (int)sizeof(tmp))
		return sl_err_set(err, SL_EINPUT, "launch directory '%s': path too long", dir);
	int fd = mkstemp(tmp);
	if (fd < 0)
		return sl_err_set(err, SL_EIO, "cannot create a file in '%s': %s; give a writable "
				  "directory", dir, strerror(errno));
	size_t len = strlen(text), done = 0;
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = errno;
			close(fd);
			unlink(tmp);
			return sl_err_set(err, SL_EIO, "cannot write '%s': %s", tmp, strerror(e));
		}
		done += (size_t)n;
	}
	/* mkstemp makes 0600; the files are read by mpirun as the same user, but 0644 matches what
	 * a user writing them by hand would get */
	if (fchmod(fd, 0644) != 0 || close(fd) != 0) {
		int e = errno;
		unlink(tmp);
		return sl_err_set(err, SL_EIO, "cannot write '%s': %s", tmp, strerror(e));
	}
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return sl_err_set(err, SL_EIO, "cannot rename '%s' to '%s': %s", tmp, path,
				  strerror(e));
	}
	if (path_out)
		snprintf(path_out, SL_LAUNCH_PATH_MAX, "%s", path);
	return 0;
}

int sl_launch_write_files(const struct sl_role_table *table, const struct sl_cluster *cluster,
			  const char *dir, char *hostfile_out, char *rankfile_out,
			  struct sl_err *err)
{
	char *hosts = sl_launch_format_hostfile(table, cluster, err);
	if (!hosts)
		return err ? err->code : SL_EINPUT;
	char *ranks = sl_launch_format_rankfile(table, cluster, err);
	if (!ranks) {
		free(hosts);
		return err ? err->code : SL_EINPUT;
	}
	int rc = write_atomic(dir, SL_LAUNCH_HOSTFILE, hosts, hostfile_out, err);
	if (!rc)
		rc = write_atomic(dir, SL_LAUNCH_RANKFILE, ranks, rankfile_out, err);
	free(hosts);
	free(ranks);
	return rc;
}

static int is_env_name(const char *s, size_t len)
{
	if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return 0;
	}
	return 1;
}

static int has_bind_to(const char *const *args, int count)
{
	for (int i = 0; args && (count < 0 ? args[i] != NULL : i < count); i++)
		if (!strncmp(args[i], "--bind-to", 9) || !strncmp(args[i], "-bind-to", 8))
			return 1;
	return 0;
}

/* What sl_launch_build refuses before it writes or builds anything: no worker program, one
 * mpirun would take for an option, an empty role table, an environment entry that is not
 * NAME=VALUE or NAME. */
static int check_launch_request(const struct sl_role_table *table,
				const struct sl_launch_opts *opts, const char *const *worker_argv,
				struct sl_err *err)
{
	if (!worker_argv || !worker_argv[0] || !worker_argv[0][0])
		return sl_err_set(err, SL_EINPUT, "launch: no worker command; pass the program "
				  "every rank runs");
	/* mpirun's options end at the first word that is not one, so a program starting with '-'
	 * would be taken for an option */
	if (worker_argv[0][0] == '-')
		return sl_err_set(err, SL_EINPUT, "launch: worker program '%s' starts with '-', "
				  "which mpirun would read as an option; give a path such as "
				  "'./%s'", worker_argv[0], worker_argv[0]);
	if (table->world_size < 1)
		return sl_err_set(err, SL_EINPUT, "launch: the role table has no ranks");
	for (int i = 0; opts->env && opts->env[i]; i++) {
		const char *eq = strchr(opts->env[i], '=');
		size_t len = eq ? (size_t)(eq - opts->env[i]) : strlen(opts->env[i]);
		if (!is_env_name(opts->env[i], len))
			return sl_err_set(err, SL_EINPUT, "launch: environment entry '%s' is not "
					  "NAME=VALUE or NAME (letters, digits, '_')",
					  opts->env[i]);
	}
	return 0;
}

/* mpirun's own options: the rank count, the placement files (or --oversubscribe on this
 * machine), --bind-to none unless the cluster file or the caller bind, then their arguments. */
static void push_mpirun_options(struct strvec *argv, const struct sl_role_table *table,
				const struct sl_cluster *cluster, const struct sl_launch_opts *opts,
				const struct sl_launch_cmd *out)
{
	vec_push(argv, opts->mpirun ? opts->mpirun : "mpirun");
	vec_push(argv, "-np");
	vec_pushf(argv, "%d", table->world_size);
	if (cluster) {
		vec_push(argv, "--hostfile");
		vec_push(argv, out->hostfile);
		vec_push(argv, "--rankfile");
		vec_push(argv, out->rankfile);
		if (cluster->agent) {
			vec_push(argv, "--mca");
			vec_push(argv, "plm_rsh_agent");
			vec_push(argv, cluster->agent);
		}
	} else {
		/* all ranks on this machine, usually more than its cores (2 on the test machines):
		 * without --oversubscribe OpenMPI refuses more ranks than cores */
		vec_push(argv, "--oversubscribe");
	}
	/* OpenMPI binds each rank to a core by default, which puts a rank's OpenMP threads on one
	 * core; the runtime sizes its own threads instead */
	if (!has_bind_to((const char *const *)(cluster ? cluster->mpirun_args : NULL),
			 cluster ? cluster->mpirun_arg_count : 0) &&
	    !has_bind_to(opts->mpirun_args, -1)) {
		vec_push(argv, "--bind-to");
		vec_push(argv, "none");
	}
	for (int i = 0; cluster && i < cluster->mpirun_arg_count; i++)
		vec_push(argv, cluster->mpirun_args[i]);
	for (int i = 0; opts->mpirun_args && opts->mpirun_args[i]; i++)
		vec_push(argv, opts->mpirun_args[i]);
}

int sl_launch_build(const struct sl_role_table *table, const struct sl_cluster *cluster,
		    const struct sl_launch_opts *opts, const char *const *worker_argv,
		    struct sl_launch_cmd *out, struct sl_err *err)
{
	static const struct sl_launch_opts defaults = {0};
	memset(out, 0, sizeof(*out));
	if (!opts)
		opts = &defaults;
	int rc = check_launch_request(table, opts, worker_argv, err);
	if (rc)
		return rc;
	if (cluster) {
		rc = sl_launch_write_files(table, cluster, opts->dir ? opts->dir : ".", out->hostfile,
					   out->rankfile, err);
		if (rc)
			return rc;
	}

	struct strvec argv = {0}, env = {0};
	push_mpirun_options(&argv, table, cluster, opts, out);

	int threads = opts->threads_per_rank;
	if (threads <= 0) {
		const char *own = getenv("OMP_NUM_THREADS");
		threads = own ? atoi(own) : 0;
		if (threads <= 0)
			threads = 1;
	}
	vec_push(&argv, "-x");
	vec_pushf(&argv, "OMP_NUM_THREADS=%d", threads);
	vec_push(&argv, "-x");
	vec_pushf(&argv, "OPENBLAS_NUM_THREADS=%d", threads);
	for (int i = 0; opts->env && opts->env[i]; i++) {
		vec_push(&argv, "-x");
		vec_push(&argv, opts->env[i]);
	}
	for (int i = 0; worker_argv[i]; i++)
		vec_push(&argv, worker_argv[i]);

	/* OpenMPI 4.1's mpirun exits at once when run as root unless both are set; there is no
	 * --allow-run-as-root in 4.1, and containers and the testbed run as root */
	if (geteuid() == 0) {
		vec_push(&env, "OMPI_ALLOW_RUN_AS_ROOT=1");
		vec_push(&env, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
	}
	if (!env.items && !env.failed) { /* not root: still a (NULL-terminated) empty list */
		env.items = calloc(1, sizeof(char *));
		if (!env.items)
			env.failed = 1;
	}
	if (argv.failed || env.failed) {
		free_strings(argv.items);
		free_strings(env.items);
		memset(out, 0, sizeof(*out));
		return sl_err_set(err, SL_ENOMEM, "launch: out of memory building the mpirun command");
	}
	out->argv = argv.items;
	out->argc = argv.count;
	out->env = env.items;
	return 0;
}

void sl_launch_cmd_free(struct sl_launch_cmd *cmd)
{
	if (!cmd)
		return;
	free_strings(cmd->argv);
	free_strings(cmd->env);
	memset(cmd, 0, sizeof(*cmd));
}

int sl_launch_find_mpirun(char *buf, size_t size, struct sl_err *err)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	const char *p = path;
	while (*p) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		char candidate[SL_LAUNCH_PATH_MAX];
		/* an empty PATH entry means the current directory */
		int n = len ? snprintf(candidate, sizeof(candidate), "%.*s/mpirun", (int)len, p)
			    : snprintf(candidate, sizeof(candidate), "./mpirun");
		struct stat st;
		if (n > 0 && (size_t)n < sizeof(candidate) && stat(candidate, &st) == 0 &&
		    S_ISREG(st.st_mode) && access(candidate, X_OK) == 0) {
			if ((size_t)n >= size)
				return sl_err_set(err, SL_EINPUT, "mpirun path '%s' does not fit the "
						  "buffer", candidate);
			memcpy(buf, candidate, (size_t)n + 1);
			return 0;
		}
		if (!colon)
			break;
		p = colon + 1;
	}
	return sl_err_set(err, SL_ENOTFOUND, "mpirun not found on PATH ('%s'); install OpenMPI "
			  "(Debian/Ubuntu: apt-get install openmpi-bin) or add its bin directory to "
			  "PATH", path);
}

static int env_int(const char *name, int *out)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0;
	char *end = NULL;
	long x = strtol(v, &end, 10);
	if (*end || x < 0 || x > 1 << 30)
		return 0;
	*out = (int)x;
	return 1;
}

int sl_launch_in_mpi_job(int *size, int *rank)
{
	int s = 0, r = -1, found = 0;
	if (env_int("OMPI_COMM_WORLD_SIZE", &s)) { /* OpenMPI's mpirun */
		found = 1;
		env_int("OMPI_COMM_WORLD_RANK", &r);
	} else if (env_int("PMI_SIZE", &s)) { /* PMI-1/2: MPICH hydra, srun --mpi=pmi2 */
		found = 1;
		env_int("PMI_RANK", &r);
	} else if (getenv("SLURM_STEP_ID") && env_int("SLURM_PROCID", &r)) {
		/* a task of an srun step; SLURM_NTASKS alone is also set in an sbatch script, which
		 * is no MPI job */
		found = 1;
		if (!env_int("SLURM_STEP_NUM_TASKS", &s))
			env_int("SLURM_NTASKS", &s);
	} else if (env_int("PMIX_RANK", &r)) { /* a PMIx launcher that does not export the size */
		found = 1;
		s = 0;
	}
	if (!found) {
		s = 0;
		r = -1;
	}
	if (size)
		*size = s;
	if (rank)
		*rank = r;
	return found;
}
