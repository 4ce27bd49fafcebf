/* Zones the simulator cannot tell apart (search/zone_equivalence.h), on the shipped data: the
 * SOSP'25 zones, whose links were each measured, differ; two zones of one region whose links
 * are the catalogue's classes are interchangeable; zones of regions with other GPU prices are
 * not, except under the sosp25 cost model, which prices a GPU the same everywhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "search/zone_equivalence.h"

static int zone(const struct sl_sim_env *env, const char *name)
{
	int z = sl_catalogue_zone_index(&env->catalogue, name);
	assert_true(z >= 0);
	return z;
}

static void interchangeable_zones(void **state)
{
	const struct sl_sim_env *env = *state;
	int central_a = zone(env, "us-central1-a"), central_b = zone(env, "us-central1-b");
	int west4_a = zone(env, "europe-west4-a"), west4_b = zone(env, "europe-west4-b");
	int east1_a = zone(env, "asia-east1-a");
	/* a zone is itself */
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SAILOR, central_a, central_a), 1);
	/* measured fits: us-central1-a's A100 links are not us-central1-b's */
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SAILOR, central_a, central_b), 0);
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SOSP25, central_a, central_b), 0);
	/* class links, one region's prices: interchangeable, both ways */
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SAILOR, west4_a, west4_b), 1);
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SAILOR, west4_b, west4_a), 1);
	/* an A100-40 costs 3.748 $/h in europe-west4, 3.790 in asia-east1 (data/zones/gcp.json) */
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SAILOR, west4_a, east1_a), 0);
	/* the sosp25 model's prices are the same everywhere; the links within each zone are the
	 * same class */
	assert_int_equal(sl_zones_interchangeable(env, SL_COST_SOSP25, west4_a, east1_a), 1);
}

static int load_env(void **state)
{
	struct sl_sim_env *env = NULL;
	struct sl_err err = {0};
	if (sl_sim_env_load("tests/golden/search/oracle-model.json", NULL, &env, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	*state = env;
	return 0;
}

static int free_env(void **state)
{
	sl_sim_env_free(*state);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(interchangeable_zones, load_env, free_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
