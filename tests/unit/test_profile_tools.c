/* Unit tests for the profilers and the device-type overlay:
 *  - the layer profiler's output loads with sl_profile_load (the simulator's reader): every
 *    (mbs, tp) asked for, every layer, times positive, blocks equal, update_s the same in every
 *    layer; provenance and memory present; a TP degree that does not divide heads is refused;
 *  - the network fit recovers a known quadratic, and degrades to a line with two sizes;
 *  - the list parser ("1,2,4") rejects empty items, zero, duplicates;
 *  - the --gpus overlay adds types after the shipped ones, and bad files (a shipped name, an
 *    unknown field, memory_bytes 0) fail with the file and the JSON path, leaving no overlay;
 *  - the network profiler's placement gives every device type with a host of two slots its
 *    own within-host pair (and none to a type whose hosts have one slot). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cluster/catalogue.h"
#include "profiler/netprof.h"
#include "profile/profile.h"
#include "profiler/profiler.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void layer_profile_loads_in_the_simulator_format(void **state)
{
	(void)state;
	char dir[] = "/tmp/sailor-test-profile-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char model[4200], path[4200];
	snprintf(model, sizeof(model), "%s/tiny.json", dir);
	write_file(model, "{\"schema\": \"sailor.model/1\", \"name\": \"tiny\", \"layers\": 2, "
			  "\"hidden\": 32, \"heads\": 4, \"ffn_hidden\": 64, \"seq_len\": 16, "
			  "\"vocab\": 50, \"global_batch\": 8}");
	struct sl_profiler_options o = {.model = model, .gpu = "cpu-fast", .mbs = {1, 2},
					.mbs_count = 2, .tp = {1, 2}, .tp_count = 2, .threads = 1,
					.repeats = 3, .warmup = 1};
	struct sl_err err = {0};
	json_t *prof = NULL;
	int rc = sl_profiler_run(&o, &prof, &err);
	if (rc)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, 0);
	json_t *src = json_object_get(prof, "source");
	assert_string_equal(json_string_value(json_object_get(src, "model")), "tiny");
	assert_int_equal(json_integer_value(json_object_get(src, "repeats")), 3);
	assert_non_null(json_object_get(src, "openblas_core"));
	json_t *e = json_object_get(json_object_get(src, "entries"), "mbs 2 tp 2");
	assert_non_null(e);
	json_t *mem = json_object_get(json_object_get(e, "memory"), "block");
	assert_true(json_integer_value(json_object_get(mem, "params_bytes")) > 0);
	assert_true(json_integer_value(json_object_get(mem, "activations_bytes")) > 0);
	assert_int_equal(sl_profiler_write(prof, dir, "tiny", "cpu-fast", path, sizeof(path), &err),
			 0);
	json_decref(prof);

	struct sl_profile *p = NULL;
	rc = sl_profile_load(path, 4, &p, &err);
	if (rc)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(p->entry_count, 4);
	for (int mbs = 1; mbs <= 2; mbs++)
		for (int tp = 1; tp <= 2; tp++) {
			const struct sl_profile_entry *x = sl_profile_find(p, mbs, tp);
			assert_non_null(x);
			for (int l = 0; l < 4; l++) {
				assert_true(x->fwd_s[l] > 0 && x->bwd_s[l] > 0 && x->update_s[l] > 0);
				assert_true(x->update_s[l] == x->update_s[0]);
			}
			assert_true(x->fwd_s[1] == x->fwd_s[2] && x->bwd_s[1] == x->bwd_s[2]);
		}
	sl_profile_free(p);
	unlink(path);
	snprintf(path, sizeof(path), "%s/tiny", dir);
	rmdir(path);

	/* 3 heads: tp 2 cannot split them */
	write_file(model, "{\"schema\": \"sailor.model/1\", \"name\": \"odd\", \"layers\": 1, "
			  "\"hidden\": 24, \"heads\": 3, \"ffn_hidden\": 48, \"seq_len\": 8, "
			  "\"vocab\": 20}");
	o.tp_count = 2;
	assert_int_equal(sl_profiler_run(&o, &prof, &err), SL_EUSAGE);
	assert_non_null(strstr(err.msg, "--tp 2"));
	unlink(model);
	rmdir(dir);
}

static void fit_recovers_a_quadratic(void **state)
{
	(void)state;
	double bytes[6], bps[6];
	for (int i = 0; i < 6; i++) {
		bytes[i] = 4096.0 * pow(4, i);
		double x = log2(bytes[i] / 1e6);
		bps[i] = 1e9 * (-0.01 * x * x + 0.2 * x + 1.5);
	}
	struct sl_link_fit f;
	assert_int_equal(sl_netprof_fit(bytes, bps, 6, &f), 0);
	if (fabs(f.a2 + 0.01) > 1e-6 || fabs(f.a1 - 0.2) > 1e-6 || fabs(f.a0 - 1.5) > 1e-6)
		print_error("fit %g %g %g\n", f.a2, f.a1, f.a0);
	assert_true(fabs(f.a2 + 0.01) < 1e-6 && fabs(f.a1 - 0.2) < 1e-6 && fabs(f.a0 - 1.5) < 1e-6);
	double max = 0;
	for (int i = 0; i < 6; i++)
		max = bps[i] > max ? bps[i] : max;
	assert_true(f.max_bps == max);
	/* two sizes: a line through both points */
	assert_int_equal(sl_netprof_fit(bytes, bps, 2, &f), 0);
	assert_true(f.a2 == 0);
	for (int i = 0; i < 2; i++) {
		double x = log2(bytes[i] / 1e6);
		assert_true(fabs((f.a1 * x + f.a0) * 1e9 - bps[i]) < 1e-3 * fabs(bps[i]));
	}
	assert_int_equal(sl_netprof_fit(bytes, bps, 0, &f), SL_EINPUT);
}

static void lists_parse_strictly(void **state)
{
	(void)state;
	int v[8], n = 0;
	struct sl_err err = {0};
	assert_int_equal(sl_profiler_parse_list("4,1,2", 1, 64, v, 8, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_true(v[0] == 1 && v[1] == 2 && v[2] == 4);
	assert_int_not_equal(sl_profiler_parse_list("1,,2", 1, 64, v, 8, &n, &err), 0);
	assert_int_not_equal(sl_profiler_parse_list("0", 1, 64, v, 8, &n, &err), 0);
	assert_int_not_equal(sl_profiler_parse_list("2,2", 1, 64, v, 8, &n, &err), 0);
	assert_non_null(strstr(err.msg, "twice"));
	assert_int_not_equal(sl_profiler_parse_list("1,", 1, 64, v, 8, &n, &err), 0);
	assert_int_not_equal(sl_profiler_parse_list("1x", 1, 64, v, 8, &n, &err), 0);
}

static void gpu_overlay_adds_types_and_rejects_bad_files(void **state)
{
	(void)state;
	struct sl_err err = {0};
	struct sl_catalogue cat;
	assert_int_equal(sl_catalogue_load(NULL, &cat, &err), 0);
	int shipped = cat.gpu_count;
	assert_int_equal(sl_catalogue_gpu_index(&cat, "cpu-fast"), -1);
	assert_int_equal(sl_catalogue_set_overlay("data/testbed/gpus-cpu.json", &err), 0);
	assert_int_equal(sl_catalogue_load(NULL, &cat, &err), 0);
	/* geo3's, quad4's, tri3's and pent5's classes */
	assert_int_equal(cat.gpu_count, shipped + 8);
	assert_int_equal(sl_catalogue_gpu_index(&cat, "cpu-fast"), shipped);
	assert_int_equal(sl_catalogue_gpu_index(&cat, "cpu-slow"), shipped + 1);
	assert_true(cat.gpus[shipped].memory_bytes == 2147483648.0);
	assert_int_equal(cat.gpus[shipped].gpus_per_node, 2);
	int tenth = sl_catalogue_gpu_index(&cat, "cpu-tenth");
	assert_true(tenth > shipped);
	assert_true(cat.gpus[tenth].cpu_quota_cores == 0.1);
	/* the testbed's vCPUs' spells (docs/design/runtime-model.md, speed spells) */
	assert_true(cat.gpus[tenth].spell_fraction == 0.19 && cat.gpus[tenth].spell_slowdown == 0.14);
	/* mix4's classes ship in a file of their own: the catalogue takes 8 beside the shipped */
	assert_int_equal(sl_catalogue_set_overlay("data/testbed/gpus-cpu-mix4.json", &err), 0);
	assert_int_equal(sl_catalogue_load(NULL, &cat, &err), 0);
	assert_int_equal(cat.gpu_count, shipped + 2);
	int seventh = sl_catalogue_gpu_index(&cat, "cpu-seventh");
	assert_true(seventh >= shipped);
	assert_true(cat.gpus[seventh].cpu_quota_cores == 0.1429);
	assert_int_equal(sl_catalogue_set_overlay("data/testbed/gpus-cpu.json", &err), 0);

	const char *path = "/tmp/sailor-test-gpus.json";
	struct {
		const char *text, *expect;
	} bad[] = {
		{"{\"schema\": \"sailor.gpus/1\", \"gpus\": [{\"name\": \"A100-40\", \"memory_bytes\": 1073741824, "
		 "\"gpus_per_node\": 1, \"usd_per_hour\": 1}]}", "gpus[0].name: 'A100-40' is a GPU type of the shipped"},
		{"{\"schema\": \"sailor.gpus/1\", \"gpus\": [{\"name\": \"x\", \"memory_bytes\": 1073741824, "
		 "\"gpus_per_node\": 1, \"usd_per_hour\": 1, \"usd_per_hr\": 2}]}", "gpus[0].usd_per_hr: unknown field"},
		{"{\"schema\": \"sailor.gpus/1\", \"gpus\": [{\"name\": \"x\", \"memory_bytes\": 0, "
		 "\"gpus_per_node\": 1, \"usd_per_hour\": 1}]}", "gpus[0].memory_bytes: 0: must be positive"},
		{"{\"schema\": \"sailor.gpus/1\", \"gpus\": [{\"name\": \"x\", \"memory_bytes\": 1073741824, "
		 "\"gpus_per_node\": 1, \"usd_per_hour\": 1}, {\"name\": \"x\", \"memory_bytes\": 1073741824, "
		 "\"gpus_per_node\": 1, \"usd_per_hour\": 1}]}", "gpus[1].name: 'x' is listed twice"},
		{"{\"schema\": \"sailor.gpus/1\", \"gpus\": [{\"name\": \"x\", \"memory_bytes\": 1073741824, "
		 "\"gpus_per_node\": 1, \"usd_per_hour\": 1, \"speed_spells\": {\"fraction\": 1, \"slowdown\": 0.1}}]}",
		 "gpus[0].speed_spells: expected {\"fraction\": 0 to below 1"},
		{"{\"schema\": \"sailor.gpus/1\", \"gpus\": [{\"name\": \"x\", \"memory_bytes\": 1073741824, "
		 "\"gpus_per_node\": 1, \"usd_per_hour\": 1, \"speed_spells\": {\"fraction\": 0.2}}]}",
		 "gpus[0].speed_spells: expected"},
		{"{\"schema\": \"sailor.gpus/1\", \"gpus\": [{\"name\": \"x\", \"memory_bytes\": 1073741824, "
		 "\"gpus_per_node\": 1, \"usd_per_hour\": 1, \"speed_spells\": {\"fraction\": 0.2, \"slowdown\": -1}}]}",
		 "\"slowdown\": 0 to 4"},
		{"{\"schema\": \"sailor.pool/1\", \"gpus\": []}", "schema: expected \"sailor.gpus/1\""},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, bad[i].text);
		memset(&err, 0, sizeof(err));
		assert_int_not_equal(sl_catalogue_set_overlay(path, &err), 0);
		if (!strstr(err.msg, bad[i].expect) || !strstr(err.msg, path))
			print_error("case %zu: got '%s'\n", i, err.msg);
		assert_non_null(strstr(err.msg, bad[i].expect));
		assert_non_null(strstr(err.msg, path));
		/* the previous overlay stays */
		assert_string_equal(sl_catalogue_overlay(), "data/testbed/gpus-cpu.json");
	}
	unlink(path);
	assert_int_equal(sl_catalogue_set_overlay(NULL, &err), 0);
	assert_null(sl_catalogue_overlay());
	assert_int_equal(sl_catalogue_load(NULL, &cat, &err), 0);
	assert_int_equal(cat.gpu_count, shipped);
}

static void every_type_with_a_two_slot_host_is_measured_within_a_host(void **state)
{
	(void)state;
	struct sl_err err = {0};
	assert_int_equal(sl_catalogue_set_overlay("data/testbed/gpus-cpu.json", &err), 0);
	struct sl_catalogue cat;
	assert_int_equal(sl_catalogue_load(NULL, &cat, &err), 0);
	const char *path = "/tmp/sailor-test-netprof-cluster.json";
	/* cpu-half on h0 and h3 (two slots each), cpu-tenth on h1 (four), cpu-fifth on h2 (one) */
	write_file(path, "{\"schema\": \"sailor.cluster/1\", \"hosts\": ["
			 "{\"name\": \"h0\", \"address\": \"localhost\", \"gpu\": \"cpu-half\", "
			 "\"zone\": \"us-central1-a\", \"slots\": 2},"
			 "{\"name\": \"h1\", \"address\": \"localhost\", \"gpu\": \"cpu-tenth\", "
			 "\"zone\": \"us-central1-c\", \"slots\": 4},"
			 "{\"name\": \"h2\", \"address\": \"localhost\", \"gpu\": \"cpu-fifth\", "
			 "\"zone\": \"us-central1-b\", \"slots\": 1},"
			 "{\"name\": \"h3\", \"address\": \"localhost\", \"gpu\": \"cpu-half\", "
			 "\"zone\": \"us-west1-b\", \"slots\": 2}]}\n");
	struct sl_cluster cluster;
	int rc = sl_cluster_load(path, &cat, &cluster, &err);
	if (rc)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, 0);
	struct sl_netprof_layout lay;
	assert_int_equal(sl_netprof_layout(&cluster, &lay, &err), 0);
	assert_int_equal(lay.intra_count, 2);
	assert_int_equal(lay.world, 6);
	assert_int_equal(lay.rank_host[4], 0); /* cpu-half's first host */
	assert_int_equal(lay.rank_host[5], 1); /* cpu-tenth's */
	sl_netprof_layout_free(&lay);
	sl_cluster_free(&cluster);
	unlink(path);
	assert_int_equal(sl_catalogue_set_overlay(NULL, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layer_profile_loads_in_the_simulator_format),
		cmocka_unit_test(fit_recovers_a_quadratic),
		cmocka_unit_test(lists_parse_strictly),
		cmocka_unit_test(gpu_overlay_adds_types_and_rejects_bad_files),
		cmocka_unit_test(every_type_with_a_two_slot_host_is_measured_within_a_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
