/* Unit tests for the GPU catalogue, zones, network fits, egress prices, pools and traces. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cluster/catalogue.h"
#include "cluster/network.h"
#include "cluster/pool.h"

static struct sl_catalogue cat;
static struct sl_network *net;

static int setup(void **state)
{
	(void)state;
	struct sl_err err = {0};
	if (sl_catalogue_load("data", &cat, &err) || sl_network_load("data", &cat, &net, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sl_network_free(net);
	return 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void catalogue_has_the_gpus_and_zones(void **state)
{
	(void)state;
	const char *names[] = {"A100-40", "A100-80", "V100-16", "GH-96", "H100-80",
			       "Titan-RTX", "RTX-2080", "RTX-3090"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int g = sl_catalogue_gpu_index(&cat, names[i]);
		assert_true(g >= 0);
		assert_true(cat.gpus[g].memory_bytes > 1e9);
		assert_true(cat.gpus[g].gpus_per_node >= 4);
		assert_true(cat.gpus[g].runtime_overhead_bytes > 0);
	}
	assert_int_equal(sl_catalogue_gpu_index(&cat, "A100"), -1);
	int a100 = sl_catalogue_gpu_index(&cat, "A100-40");
	assert_true(fabs(cat.gpus[a100].usd_per_hour - 3.673385) < 1e-12);
	assert_int_equal(cat.gpus[sl_catalogue_gpu_index(&cat, "A100-80")].network_as, a100);
	int za = sl_catalogue_zone_index(&cat, "us-central1-a");
	int zb = sl_catalogue_zone_index(&cat, "us-central1-b");
	int zw = sl_catalogue_zone_index(&cat, "us-west1-b");
	assert_true(za >= 0 && zb >= 0 && zw >= 0);
	assert_true(za < zb && zb < zw); /* zones sorted by name */
	for (int z = 1; z < cat.zone_count; z++)
		assert_true(strcmp(cat.zones[z - 1].name, cat.zones[z].name) < 0);
	assert_int_equal(sl_catalogue_zone_region(&cat, za), sl_catalogue_zone_region(&cat, zb));
	assert_int_not_equal(sl_catalogue_zone_region(&cat, za), sl_catalogue_zone_region(&cat, zw));
	assert_string_equal(cat.regions[sl_catalogue_zone_region(&cat, zw)].name, "us-west1");
	char buf[256];
	assert_non_null(strstr(sl_catalogue_gpu_names(&cat, buf, sizeof(buf)), "GH-96"));
}

/* SIMULATOR.md section 2.5, the table of bandwidths at 8 MB. */
static void network_fits_match_the_artifact(void **state)
{
	(void)state;
	int a100 = sl_catalogue_gpu_index(&cat, "A100-40");
	int v100 = sl_catalogue_gpu_index(&cat, "V100-16");
	int gh = sl_catalogue_gpu_index(&cat, "GH-96");
	int za = sl_catalogue_zone_index(&cat, "us-central1-a");
	int zw = sl_catalogue_zone_index(&cat, "us-west1-b");
	const struct sl_link_fit *f = sl_network_fit(net, za, a100, 1, za, a100, 1);
	assert_int_equal(f->derived, 0);
	assert_true(fabs(sl_link_fit_gbps(f, 8e6) - 1.52) < 0.01);
	assert_true(fabs(sl_link_fit_gbps(f, 512e6) - 2.19) < 0.01);
	assert_true(fabs(f->max_bps - 2.42e9) < 0.01e9);
	f = sl_network_fit(net, za, a100, 4, za, a100, 4);
	assert_true(fabs(sl_link_fit_gbps(f, 8e6) - 5.66) < 0.01);
	f = sl_network_fit(net, za, a100, 1, zw, a100, 1);
	assert_true(fabs(sl_link_fit_gbps(f, 8e6) - 0.33) < 0.01);
	f = sl_network_fit(net, za, v100, 4, za, v100, 4);
	assert_true(fabs(sl_link_fit_gbps(f, 8e6) - 4.34) < 0.01);
	f = sl_network_fit(net, za, gh, 4, za, gh, 4);
	assert_true(fabs(sl_link_fit_gbps(f, 8e6) - 73.6) < 0.1);
	/* send time = (bytes/1e9) / GB/s */
	f = sl_network_fit(net, za, a100, 1, za, a100, 1);
	assert_true(fabs(sl_link_send_time_s(f, 8e6) - 0.008 / sl_link_fit_gbps(f, 8e6)) < 1e-12);
	assert_true(sl_link_send_time_s(f, 0) == 0.0);
}

static void missing_links_get_flagged_stand_ins(void **state)
{
	(void)state;
	int a100 = sl_catalogue_gpu_index(&cat, "A100-40");
	int a80 = sl_catalogue_gpu_index(&cat, "A100-80");
	int gh = sl_catalogue_gpu_index(&cat, "GH-96");
	int h100 = sl_catalogue_gpu_index(&cat, "H100-80");
	int rtx = sl_catalogue_gpu_index(&cat, "RTX-3090");
	int za = sl_catalogue_zone_index(&cat, "us-central1-a");
	int zb = sl_catalogue_zone_index(&cat, "us-central1-b");
	int zw = sl_catalogue_zone_index(&cat, "us-west1-b");
	/* A100-80 has no fits: the A100-40 ones stand in */
	const struct sl_link_fit *f = sl_network_fit(net, za, a80, 2, za, a80, 2);
	const struct sl_link_fit *g = sl_network_fit(net, za, a100, 2, za, a100, 2);
	assert_int_equal(f->derived, 1);
	assert_true(f->a0 == g->a0 && f->a1 == g->a1 && f->a2 == g->a2);
	/* GH-96 across zones b -> west: not measured; no faster than the same-zone link and no faster
	 * than the slowest measured b <-> west link */
	f = sl_network_fit(net, zb, gh, 4, zw, gh, 4);
	assert_int_equal(f->derived, 1);
	assert_true(f->max_bps <= sl_network_fit(net, za, gh, 4, za, gh, 4)->max_bps);
	assert_true(f->max_bps <= sl_network_fit(net, zb, a100, 4, zw, a100, 4)->max_bps);
	/* H100-80 uses GH-96's; RTX in zone b (never measured there) gets something finite */
	assert_int_equal(sl_network_fit(net, za, h100, 4, za, h100, 4)->derived, 1);
	f = sl_network_fit(net, zb, rtx, 8, zw, a100, 1);
	assert_int_equal(f->derived, 1);
	assert_true(sl_link_send_time_s(f, 1e8) > 0 && isfinite(sl_link_send_time_s(f, 1e8)));
	/* intra-node fits exist for every type */
	for (int k = 0; k < cat.gpu_count; k++)
		assert_true(sl_link_send_time_s(sl_network_intra_fit(net, k, 4), 1e8) > 0);
}

static void egress_prices(void **state)
{
	(void)state;
	int za = sl_catalogue_zone_index(&cat, "us-central1-a");
	int zb = sl_catalogue_zone_index(&cat, "us-central1-b");
	int zw = sl_catalogue_zone_index(&cat, "us-west1-b");
	assert_true(sl_network_egress_usd_per_gb(net, za, za) == 0.0);
	assert_true(fabs(sl_network_egress_usd_per_gb(net, za, zb) - 0.01) < 1e-12);
	assert_true(fabs(sl_network_egress_usd_per_gb(net, zw, za) - 0.02) < 1e-12);
}

static void pool_file_loads_and_rejects_unknown_names(void **state)
{
	(void)state;
	struct sl_err err = {0};
	struct sl_pool pool;
	assert_int_equal(sl_pool_load("data/examples/pool-a100-v100.json", &cat, &pool, &err), 0);
	assert_int_equal(sl_pool_total(&pool), 80);
	assert_int_equal(sl_pool_gpu_total(&pool, sl_catalogue_gpu_index(&cat, "A100-40")), 48);
	json_t *j = sl_pool_to_json(&pool, &cat);
	char *text = json_dumps(j, JSON_PRESERVE_ORDER | JSON_COMPACT);
	assert_non_null(strstr(text, "\"schema\":\"sailor.pool/1\""));
	free(text);
	json_decref(j);
	const char *path = "/tmp/sailor_test_pool.json";
	write_file(path, "{\"schema\":\"sailor.pool/1\",\"gpus\":[{\"gpu\":\"B200\",\"zone\":\"us-central1-a\",\"count\":4}]}");
	assert_int_equal(sl_pool_load(path, &cat, &pool, &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "gpus[0].gpu: unknown GPU type 'B200'"));
	write_file(path, "{\"gpus\":[{\"gpu\":\"A100-40\",\"zone\":\"mars-1a\",\"count\":4}]}");
	assert_int_equal(sl_pool_load(path, &cat, &pool, &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "gpus[0].zone: unknown zone 'mars-1a'"));
	write_file(path, "{\"gpus\":[{\"gpu\":\"A100-40\",\"zone\":\"us-central1-a\",\"count\":-1}]}");
	assert_int_equal(sl_pool_load(path, &cat, &pool, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "gpus[0].count"));
	remove(path);
}

/* SIMULATOR.md section 2.10: a step per change, duration to the next change, last lasts 0. */
static void traces_parse_like_the_artifact(void **state)
{
	(void)state;
	struct sl_err err = {0};
	struct sl_pool_trace tr;
	assert_int_equal(sl_trace_load_csv("data/traces/gpu_trace_scaled.csv", &cat, &tr, &err), 0);
	assert_int_equal(tr.step_count, 3);
	int a100 = sl_catalogue_gpu_index(&cat, "A100-40");
	int za = sl_catalogue_zone_index(&cat, "us-central1-a");
	assert_int_equal(tr.steps[0].counts[a100][za], 32);
	assert_int_equal(tr.steps[2].counts[a100][za], 128);
	assert_true(fabs(tr.steps[0].duration_s - (1712574137.19241 - 1712574014.0187)) < 1e-6);
	assert_true(tr.steps[2].duration_s == 0.0);
	sl_pool_trace_free(&tr);
	/* one row without a trailing newline: one step of duration 0 */
	assert_int_equal(sl_pool_trace_load("data/traces/gpu_trace_2zones_2gpus.csv", &cat, &tr, &err), 0);
	assert_int_equal(tr.step_count, 1);
	assert_int_equal(sl_pool_total(&tr.steps[0]), 512);
	assert_true(tr.steps[0].duration_s == 0.0);
	sl_pool_trace_free(&tr);
	/* an empty first step is dropped, repeated rows merge */
	const char *path = "/tmp/sailor_test_trace.csv";
	write_file(path, ",Timestamp,A100-40_us-central1-a,V100-16_us-central1-b\n"
			 "0,100,0,0\n1,110,8,4\n2,130,8,4\n3,170,16,4\n");
	assert_int_equal(sl_trace_load_csv(path, &cat, &tr, &err), 0);
	assert_int_equal(tr.step_count, 2);
	assert_true(fabs(tr.steps[0].duration_s - 60.0) < 1e-9);
	assert_int_equal(sl_pool_total(&tr.steps[1]), 20);
	sl_pool_trace_free(&tr);
	/* a JSON pool through the same entry point */
	assert_int_equal(sl_pool_trace_load("data/examples/pool-a100-v100.json", &cat, &tr, &err), 0);
	assert_int_equal(tr.step_count, 1);
	sl_pool_trace_free(&tr);
	write_file(path, ",Timestamp,A100-40_us-central1-z\n0,1,4\n");
	assert_int_equal(sl_trace_load_csv(path, &cat, &tr, &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "unknown zone 'us-central1-z'"));
	assert_non_null(strstr(err.msg, path));
	write_file(path, ",Timestamp,A100-40_us-central1-a\n0,1,four\n");
	assert_int_equal(sl_trace_load_csv(path, &cat, &tr, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "line 2"));
	remove(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(catalogue_has_the_gpus_and_zones),
		cmocka_unit_test(network_fits_match_the_artifact),
		cmocka_unit_test(missing_links_get_flagged_stand_ins),
		cmocka_unit_test(egress_prices),
		cmocka_unit_test(pool_file_loads_and_rejects_unknown_names),
		cmocka_unit_test(traces_parse_like_the_artifact),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
