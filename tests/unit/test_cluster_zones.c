/* Unit tests for the zone catalogue of the clouds (cluster/zone_files, the catalogue's zones and
 * prices), egress between zones (cluster/egress), the links nobody measured (cluster/link_model)
 * and the network's pairs of zones outside the SOSP'25 artifact's five. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cluster/egress.h"
#include "cluster/link_model.h"
#include "cluster/network.h"
#include "cluster/pool.h"
#include "cluster/zone_files.h"
#include "util/nearest_names.h"

static struct sl_catalogue cat;
static struct sl_egress *eg;
static struct sl_link_model *lm;
static struct sl_network *net;

static int setup(void **state)
{
	(void)state;
	struct sl_err err = {0};
	sl_zone_files_clear_overlays();
	if (sl_catalogue_load("data", &cat, &err) || sl_egress_load("data", &cat, &eg, &err) ||
	    sl_link_model_load("data", &cat, &lm, &err) ||
	    sl_network_load("data", &cat, &net, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sl_network_free(net);
	sl_link_model_free(lm);
	sl_egress_free(eg);
	return 0;
}

static int zone(const char *name)
{
	int z = sl_catalogue_zone_index(&cat, name);
	if (z < 0)
		fail_msg("zone '%s' is not in the catalogue", name);
	return z;
}

/* The three clouds, with the providers' own names, a region's provider, continent, location. */
static void catalogue_names_the_clouds_zones(void **state)
{
	(void)state;
	assert_true(cat.zone_count >= 200);
	const char *names[] = {"europe-west4-a", "asia-east1-a", "us-east1-b", "eu-central-1a",
			       "ap-northeast-1a", "westeurope", "us-central1-f", "us-west1-b"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		zone(names[i]);
	const struct sl_region *r = sl_catalogue_zone_region_info(&cat, zone("europe-west4-a"));
	assert_string_equal(r->name, "europe-west4");
	assert_string_equal(r->provider, "gcp");
	assert_string_equal(sl_zone_files_continent(r->continent), "europe");
	assert_true(r->lat_deg > 50 && r->lat_deg < 55 && r->lon_deg > 3 && r->lon_deg < 8);
	r = sl_catalogue_zone_region_info(&cat, zone("eu-central-1a"));
	assert_string_equal(r->provider, "aws");
	assert_string_equal(r->city, "Frankfurt");
	assert_string_equal(sl_catalogue_zone_region_info(&cat, zone("westeurope"))->provider,
			    "azure");
	/* Frankfurt to Iowa: about 7,400 km */
	double km = sl_catalogue_zone_distance_km(&cat, zone("eu-central-1a"), zone("us-central1-a"));
	assert_true(km > 7000 && km < 7800);
}

/* Every zone costs something for every GPU type, and sending from any zone to any other has a
 * price and a link class with figures: nothing is left for a plan to fall through. */
static void every_zone_pair_has_a_price_and_a_class(void **state)
{
	(void)state;
	struct sl_link_fit ref = {0, 0, 0.5, 5e8, 0, 0, SL_LINK_SOURCE_SOSP25_FIT};
	for (int a = 0; a < cat.zone_count; a++) {
		for (int g = 0; g < cat.gpu_count; g++)
			assert_true(sl_catalogue_gpu_usd_per_hour(&cat, g, a) > 0);
		for (int b = 0; b < cat.zone_count; b++) {
			char source[512];
			double usd = sl_egress_usd_per_gb(eg, &cat, a, b, source, sizeof(source));
			if (!(usd >= 0 && usd < 1) || !source[0])
				fail_msg("%s -> %s: %g $/GB (%s)", cat.zones[a].name, cat.zones[b].name,
					 usd, source);
			assert_true(a != b || usd == 0);
			enum sl_link_class c = sl_link_model_class_of(&cat, a, b);
			assert_true(c >= 0 && c < SL_LINK_CLASSES);
			assert_true((a == b) == (c == SL_LINK_CLASS_SAME_ZONE));
			if (c >= SL_LINK_CLASS_SAME_CONTINENT) {
				struct sl_link_fit f;
				sl_link_model_class_fit(lm, &cat, a, b, &ref, &f);
				assert_true(f.a0 > 0 && f.max_bps > 0);
				assert_true(f.latency_s >= 0 && f.latency_s < 1);
			}
		}
	}
}

/* The SOSP'25 comparisons: the artifact's five zones keep its prices, egress and fits. */
static void the_artifact_zones_keep_their_figures(void **state)
{
	(void)state;
	const char *five[] = {"us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f",
			      "us-west1-b"};
	for (int i = 0; i < 5; i++)
		for (int g = 0; g < cat.gpu_count; g++) {
			assert_false(sl_catalogue_gpu_price_listed(&cat, g, zone(five[i])));
			assert_true(sl_catalogue_gpu_usd_per_hour(&cat, g, zone(five[i])) ==
				    cat.gpus[g].usd_per_hour);
		}
	int a = zone("us-central1-a"), b = zone("us-central1-b"), w = zone("us-west1-b");
	assert_true(sl_network_egress_usd_per_gb(net, a, b) == 0.01);
	assert_true(sl_network_egress_usd_per_gb(net, a, w) == 0.02);
	assert_true(sl_network_egress_usd_per_gb(net, w, a) == 0.02);
	assert_string_equal(sl_network_egress_source(net, a, w), "SOSP'25 artifact");
	int g = sl_catalogue_gpu_index(&cat, "A100-40");
	const struct sl_link_fit *f = sl_network_fit(net, a, g, 1, w, g, 1);
	assert_int_equal(f->source, SL_LINK_SOURCE_SOSP25_FIT);
	assert_int_equal(f->derived, 0);
	assert_true(f->latency_s == 0);
	assert_string_equal(sl_network_source_name(f), "SOSP'25 fit");
}

/* The clouds' lists: each side pays its own provider's internet egress across providers; a
 * region's own prices within a provider. */
static void egress_follows_the_price_lists(void **state)
{
	(void)state;
	int gcp_eu = zone("europe-west4-a"), aws_fra = zone("eu-central-1a");
	int aws_fra_b = zone("eu-central-1b"), gcp_syd = zone("australia-southeast1-a");
	char s[512];
	double to_aws = sl_egress_usd_per_gb(eg, &cat, gcp_eu, aws_fra, s, sizeof(s));
	assert_non_null(strstr(s, "gcp list: internet"));
	double to_gcp = sl_egress_usd_per_gb(eg, &cat, aws_fra, gcp_eu, s, sizeof(s));
	assert_non_null(strstr(s, "aws list: internet"));
	assert_true(to_aws == 0.12 && to_gcp == 0.09);
	/* AWS between Availability Zones: $0.01/GB out of one and $0.01/GB into the other */
	assert_true(sl_egress_usd_per_gb(eg, &cat, aws_fra, aws_fra_b, s, sizeof(s)) == 0.02);
	/* GCP to Oceania across continents: the pair listed */
	assert_true(sl_egress_usd_per_gb(eg, &cat, gcp_eu, gcp_syd, s, sizeof(s)) == 0.15);
	assert_true(sl_egress_usd_per_gb(eg, &cat, gcp_eu, zone("us-east1-b"), s, sizeof(s)) ==
		    0.08);
	assert_true(sl_egress_usd_per_gb(eg, &cat, gcp_eu, zone("europe-west1-b"), s, sizeof(s)) ==
		    0.02);
}

/* Classes, and the class links: slower and later across continents, the latency growing with
 * the distance; the GPU node's own network caps a class link. */
static void links_nobody_measured_follow_their_class(void **state)
{
	(void)state;
	int ia = zone("us-central1-a"), nl = zone("europe-west4-a"), nl2 = zone("europe-west4-b");
	int de = zone("europe-west3-a"), tw = zone("asia-east1-a"), fra = zone("eu-central-1a");
	assert_int_equal(sl_link_model_class_of(&cat, nl, nl2), SL_LINK_CLASS_SAME_REGION);
	assert_int_equal(sl_link_model_class_of(&cat, nl, de), SL_LINK_CLASS_SAME_CONTINENT);
	assert_int_equal(sl_link_model_class_of(&cat, nl, tw), SL_LINK_CLASS_ACROSS_CONTINENTS);
	assert_int_equal(sl_link_model_class_of(&cat, nl, fra),
			 SL_LINK_CLASS_PROVIDERS_SAME_CONTINENT);
	assert_int_equal(sl_link_model_class_of(&cat, ia, fra),
			 SL_LINK_CLASS_PROVIDERS_ACROSS_CONTINENTS);
	int g = sl_catalogue_gpu_index(&cat, "A100-40");
	const struct sl_link_fit *near = sl_network_fit(net, nl, g, 1, de, g, 1);
	const struct sl_link_fit *far = sl_network_fit(net, nl, g, 1, tw, g, 1);
	const struct sl_link_fit *ref = sl_network_fit(net, ia, g, 1, zone("us-west1-b"), g, 1);
	assert_string_equal(sl_network_source_name(near), "class same-continent");
	assert_string_equal(sl_network_source_name(far), "class across-continents");
	assert_true(far->latency_s > near->latency_s);
	assert_true(far->max_bps < near->max_bps && near->max_bps < ref->max_bps);
	assert_true(sl_link_send_time_s(far, 64e6) > sl_link_send_time_s(near, 64e6));
	/* within a zone and a region: the artifact's fits of the type, measured elsewhere */
	const struct sl_link_fit *same = sl_network_fit(net, nl, g, 1, nl, g, 1);
	const struct sl_link_fit *home = sl_network_fit(net, ia, g, 1, ia, g, 1);
	assert_true(same->a0 == home->a0 && same->max_bps == home->max_bps);
	assert_string_equal(sl_network_source_name(same), "class same-zone");
	/* a node of 1 Gb/s (RTX-2080) is no faster over any path */
	int rtx = sl_catalogue_gpu_index(&cat, "RTX-2080");
	const struct sl_link_fit *slow = sl_network_fit(net, nl, rtx, 1, tw, rtx, 1);
	assert_true(slow->max_bps <= sl_network_fit(net, ia, rtx, 1, ia, rtx, 1)->max_bps);
	assert_true(slow->latency_s == far->latency_s);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A user's zone file adds a region of its own, overrides a price and adds a link; its prices
 * and link are what the catalogue and the network then say. */
static void a_zone_file_adds_and_overrides(void **state)
{
	(void)state;
	const char *path = "/tmp/sailor_test_zones.json";
	write_file(path, "{\"schema\": \"sailor.zones/1\", \"provider\": \"lab\","
			 " \"egress_usd_per_gb\": {\"world\": 0.05, \"internet\": 0.04},"
			 " \"regions\": [{\"name\": \"zurich-lab\", \"continent\": \"europe\","
			 " \"lat\": 47.4, \"lon\": 8.5, \"gpu_usd_per_hour\": {\"A100-80\":"
			 " {\"on_demand\": 1.5}}}, {\"name\": \"europe-west4\", \"gpu_usd_per_hour\":"
			 " {\"A100-40\": {\"on_demand\": 2.0, \"spot\": 0.9}}}],"
			 " \"zones\": [{\"name\": \"zurich-lab-1\", \"region\": \"zurich-lab\"}],"
			 " \"links\": [{\"from\": \"zurich-lab-1\", \"to\": \"europe-west4\","
			 " \"bandwidth_bps\": 1.25e9, \"latency_s\": 0.004}]}");
	struct sl_err err = {0};
	assert_int_equal(sl_zone_files_add_overlay(path, &err), 0);
	struct sl_catalogue *c = malloc(sizeof(*c));
	struct sl_network *n = NULL;
	assert_int_equal(sl_catalogue_load("data", c, &err), 0);
	assert_int_equal(sl_network_load("data", c, &n, &err), 0);
	int lab = sl_catalogue_zone_index(c, "zurich-lab-1");
	int nl = sl_catalogue_zone_index(c, "europe-west4-a");
	int a80 = sl_catalogue_gpu_index(c, "A100-80"), a40 = sl_catalogue_gpu_index(c, "A100-40");
	assert_true(lab >= 0 && nl >= 0);
	assert_true(sl_catalogue_gpu_usd_per_hour(c, a80, lab) == 1.5);
	assert_true(sl_catalogue_gpu_usd_per_hour(c, a40, nl) == 2.0);
	assert_true(c->regions[c->zones[nl].region].gpu_spot_usd_per_hour[a40] == 0.9);
	const struct sl_link_fit *f = sl_network_fit(n, lab, a80, 1, nl, a40, 1);
	assert_int_equal(f->source, SL_LINK_SOURCE_ZONES_FILE);
	assert_true(f->latency_s == 0.004 && f->max_bps <= 1.25e9);
	assert_non_null(strstr(sl_network_link_origin(n, nl, lab), "sailor_test_zones.json"));
	assert_true(sl_network_egress_usd_per_gb(n, lab, nl) == 0.04); /* lab -> gcp: internet */
	assert_true(sl_network_egress_usd_per_gb(n, nl, lab) == 0.12); /* gcp -> lab: internet */
	sl_network_free(n);
	free(c);
	sl_zone_files_clear_overlays();
	remove(path);
}

/* The shipped files are parsed once per process and kept: a load after a file changed sees the
 * change, and an overlay merged over the kept files leaves them as they were. */
static void shipped_files_kept_until_they_change(void **state)
{
	(void)state;
	char dir[] = "/tmp/sailor_test_zdata_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char zones[64], file[96], extra[96];
	snprintf(zones, sizeof(zones), "%s/zones", dir);
	snprintf(file, sizeof(file), "%s/one.json", zones);
	snprintf(extra, sizeof(extra), "%s/extra.json", dir);
	assert_int_equal(mkdir(zones, 0777), 0);
	const char *head = "{\"schema\": \"sailor.zones/1\", \"provider\": \"lab\","
			   " \"egress_usd_per_gb\": {\"world\": 0.05, \"internet\": 0.04},"
			   " \"regions\": [{\"name\": \"r1\", \"continent\": \"europe\","
			   " \"lat\": 47.4, \"lon\": 8.5}";
	char text[1024];
	snprintf(text, sizeof(text), "%s], \"zones\": [{\"name\": \"r1-a\", \"region\": \"r1\"}]}",
		 head);
	write_file(file, text);
	struct sl_err err = {0};
	struct sl_zone_files *zf = NULL;
	for (int round = 0; round < 2; round++) { /* parsed, then from what was kept */
		assert_int_equal(sl_zone_files_load(dir, &zf, &err), 0);
		assert_int_equal(zf->region_count, 1);
		assert_string_equal(zf->zones[0].name, "r1-a");
		sl_zone_files_free(zf);
	}
	write_file(extra, "{\"schema\": \"sailor.zones/1\", \"provider\": \"lab\", \"regions\":"
			  " [{\"name\": \"r9\", \"continent\": \"asia\", \"lat\": 1, \"lon\": 2,"
			  " \"egress_usd_per_gb\": {\"world\": 0.1, \"internet\": 0.1}}]}");
	assert_int_equal(sl_zone_files_add_overlay(extra, &err), 0);
	assert_int_equal(sl_zone_files_load(dir, &zf, &err), 0);
	assert_int_equal(zf->region_count, 2);
	sl_zone_files_free(zf);
	sl_zone_files_clear_overlays();
	assert_int_equal(sl_zone_files_load(dir, &zf, &err), 0);
	assert_int_equal(zf->region_count, 1); /* the overlay did not stay in what was kept */
	sl_zone_files_free(zf);
	/* a longer file (its size changed): read again */
	snprintf(text, sizeof(text), "%s, {\"name\": \"r2\", \"continent\": \"asia\", \"lat\": 35,"
		 " \"lon\": 139}], \"zones\": [{\"name\": \"r1-a\", \"region\": \"r1\"},"
		 " {\"name\": \"r2-a\", \"region\": \"r2\"}]}", head);
	write_file(file, text);
	assert_int_equal(sl_zone_files_load(dir, &zf, &err), 0);
	assert_int_equal(zf->region_count, 2);
	assert_int_equal(zf->zone_count, 2);
	sl_zone_files_free(zf);
	remove(file);
	remove(extra);
	rmdir(zones);
	rmdir(dir);
}

/* Bad zone files: one message naming the file and the field, and the overlay is not kept. */
static void bad_zone_files_name_file_and_field(void **state)
{
	(void)state;
	static const struct {
		const char *text, *expect[2];
	} cases[] = {
		{"{\"schema\": \"sailor.zones/1\", \"provider\": \"lab\", \"zones\": [{\"name\": \"lab-1\"}]}",
		 {"zones[0].region: missing", "name the region"}},
		{"{\"schema\": \"sailor.zones/1\", \"regions\": [{\"name\": \"europe-west4\","
		 " \"gpu_usd_per_hour\": {\"A100-40\": {\"on_demand\": -2}}}]}",
		 {"regions[0].gpu_usd_per_hour.A100-40.on_demand", "-2 is negative"}},
		{"{\"schema\": \"sailor.zones/1\", \"links\": [{\"from\": \"europe-west4-a\","
		 " \"to\": \"asia-east1-a\", \"latency_s\": 0.1}]}",
		 {"links[0].bandwidth_bps: missing", "bytes/s"}},
		{"{\"schema\": \"sailor.zones/1\", \"zones\": [{\"name\": \"x-1\", \"region\": \"europe-wset4\"}]}",
		 {"unknown region 'europe-wset4'", "nearest: europe-west4"}},
		{"{\"schema\": \"sailor.zones/1\", \"regions\": [{\"name\": \"europe-west4\","
		 " \"gpu_usd_per_hour\": {\"A100-41\": {\"on_demand\": 2}}}]}",
		 {"gpu_usd_per_hour.A100-41", "unknown GPU type"}},
		{"{\"schema\": \"sailor.zones/1\", \"provider\": \"lab\", \"regions\": [{\"name\": \"lab\","
		 " \"continent\": \"europe\", \"lat\": 1, \"lon\": 2}], \"zones\": [{\"name\": \"lab-1\","
		 " \"region\": \"lab\"}]}",
		 {"egress_usd_per_gb.world: missing", "provider 'lab'"}},
		{"{\"schema\": \"sailor.zones/1\", \"regions\": [{\"name\": \"x\", \"prce\": 1}]}",
		 {"regions[0].prce: unknown field", "allowed"}},
	};
	const char *path = "/tmp/sailor_test_bad_zones.json";
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_file(path, cases[i].text);
		struct sl_err err = {0};
		assert_int_not_equal(sl_zone_files_add_overlay(path, &err), 0);
		if (!strstr(err.msg, "sailor_test_bad_zones.json") ||
		    !strstr(err.msg, cases[i].expect[0]) || !strstr(err.msg, cases[i].expect[1]))
			fail_msg("case %zu: %s", i, err.msg);
		assert_int_equal(sl_zone_files_overlay_count(), 0);
	}
	remove(path);
}

/* A pool of the world names an unknown zone's nearest names; a pool of more zones than the
 * planner searches is the planner's to refuse, not the pool's. */
static void pools_name_the_nearest_zones(void **state)
{
	(void)state;
	const char *path = "/tmp/sailor_test_world_pool.json";
	write_file(path, "{\"schema\": \"sailor.pool/1\", \"gpus\": [{\"gpu\": \"A100-40\","
			 " \"zone\": \"europe-west4-a\", \"count\": 8}, {\"gpu\": \"A100-40\","
			 " \"zone\": \"asia-east1-z\", \"count\": 8}]}");
	struct sl_pool pool;
	struct sl_err err = {0};
	assert_int_equal(sl_pool_load(path, &cat, &pool, &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "gpus[1].zone: unknown zone 'asia-east1-z' (nearest: "
					"asia-east1-a, asia-east1-b, asia-east1-c"));
	remove(path);
}

static void nearest_names_by_edit_distance(void **state)
{
	(void)state;
	assert_int_equal(sl_nearest_names_distance("kitten", "sitting"), 3);
	assert_int_equal(sl_nearest_names_distance("", "abc"), 3);
	assert_int_equal(sl_nearest_names_distance("US-EAST1-B", "us-east1-b"), 0);
	char buf[128];
	sl_catalogue_zone_suggest(&cat, "eu-centrl-1a", buf, sizeof(buf));
	assert_true(!strncmp(buf, "eu-central-1a", 13));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(catalogue_names_the_clouds_zones),
		cmocka_unit_test(every_zone_pair_has_a_price_and_a_class),
		cmocka_unit_test(the_artifact_zones_keep_their_figures),
		cmocka_unit_test(egress_follows_the_price_lists),
		cmocka_unit_test(links_nobody_measured_follow_their_class),
		cmocka_unit_test(a_zone_file_adds_and_overrides),
		cmocka_unit_test(shipped_files_kept_until_they_change),
		cmocka_unit_test(bad_zone_files_name_file_and_field),
		cmocka_unit_test(pools_name_the_nearest_zones),
		cmocka_unit_test(nearest_names_by_edit_distance),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
