/* Fuzz target: the network files (data/network/: link fits, intra-node fits, egress prices)
 * through sl_network_load. The first byte picks which of the three files the rest of the input
 * replaces; the other two are the shipped ones (and the zone files and link classes beside
 * them). Accepted fits are evaluated between a sample of zones (every pair resolves when first
 * asked, so not all of the catalogue's hundreds) and must give finite, non-negative transfer
 * times. */
#include <math.h>
#include <string.h>

#include "cluster/catalogue.h"
#include "cluster/network.h"
#include "fuzz_util.h"

static const char *const files[3] = {"network/zone_bandwidths.json",
				     "network/intra_node_bandwidths.json",
				     "network/egress_usd_per_gb.json"};

/* The zones checked: the SOSP'25 artifact's (us-central1, us-west1) and every 37th. */
static int sampled(const struct sl_catalogue *cat, int z)
{
	return z % 37 == 0 || !strncmp(cat->zones[z].name, "us-central1-", 12) ||
	       !strcmp(cat->zones[z].name, "us-west1-b");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_catalogue cat;
	static int loaded;
	struct sl_err err = {0};
	fuzz_setup();
	if (!loaded && sl_catalogue_load(NULL, &cat, &err)) {
		fprintf(stderr, "fuzz_network: %s\n", err.msg);
		abort();
	}
	loaded = 1;
	if (size < 1)
		return 0;
	int which = data[0] % 3;
	char name[128];
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "net/%s", files[i]);
		if (i == which)
			fuzz_write(name, data + 1, size - 1);
		else
			fuzz_link_data(name, files[i]);
	}
	fuzz_link_data("net/network/link_classes.json", "network/link_classes.json");
	fuzz_link_data("net/zones", "zones");
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/net", fuzz_dir());
	struct sl_network *net = NULL;
	if (!sl_network_load(dir, &cat, &net, &err)) {
		for (int a = 0; a < cat.zone_count; a++)
			for (int b = 0; b < cat.zone_count; b++) {
				if (!sampled(&cat, a) || !sampled(&cat, b))
					continue;
				const struct sl_link_fit *fit = sl_network_fit(net, a, 0, 1, b, 0, 1);
				if (fit)
					fuzz_assert(isfinite(sl_link_send_time_s(fit, 1e6)) && sl_link_send_time_s(fit, 1e6) >= 0);
				fuzz_assert(sl_network_egress_usd_per_gb(net, a, b) >= 0);
			}
		for (int g = 0; g < cat.gpu_count; g++) {
			const struct sl_link_fit *fit = sl_network_intra_fit(net, g, 2);
			if (fit)
				fuzz_assert(isfinite(sl_link_send_time_s(fit, 1e6)) && sl_link_send_time_s(fit, 1e6) >= 0);
		}
	}
	sl_network_free(net);
	return 0;
}
