/* Egress: what sending a GB (1e9 bytes) from one zone to another costs, USD, and whose price
 * list says so.
 *
 * The price of src -> dst, first that applies:
 *   1. the same zone: 0 (no provider charges traffic that stays in a zone);
 *   2. a zone pair listed: data/network/egress_usd_per_gb.json (the SOSP'25 artifact's five
 *      zones, whose comparisons keep exactly these prices), then the "egress_pairs" of the zone
 *      files that name two zones, the last listed winning;
 *   3. another provider: the source region's internet price (each side pays its own provider's
 *      internet egress for what it sends; ingress is free at all three clouds);
 *   4. the same region: the region's price between its zones;
 *   5. a region pair listed ("egress_pairs" naming two regions);
 *   6. the same continent: the region's price to its provider's regions there, or, where the
 *      list has none, its intercontinental price (flagged in the source);
 *   7. else the region's intercontinental price.
 * Prices come from the zone files (cluster/zone_files.h), each with its list and date.
 *
 * Ownership: sl_egress_load allocates; sl_egress_free frees. Lookups allocate nothing; they are
 * O(log pairs).
 */
#ifndef SL_CLUSTER_EGRESS_H
#define SL_CLUSTER_EGRESS_H

#include <stddef.h>

#include "cluster/catalogue.h"
#include "util/err.h"

struct sl_egress; /* opaque */

/* The prices of a region's egress list (the zone files' "egress" keys zone, continent, world and
 * internet): between its zones, to its provider's regions on its continent, on other continents,
 * and to the internet (another provider). */
enum sl_egress_kind {
	SL_EGRESS_ZONE,
	SL_EGRESS_CONTINENT,
	SL_EGRESS_WORLD,
	SL_EGRESS_INTERNET,
	SL_EGRESS_KINDS
};

/* Loads the prices of the zone files and the SOSP'25 artifact's zone pairs under data_dir (NULL =
 * sl_paths_data_dir()) for the zones and regions of cat. Errors name the file and the JSON path. */
int sl_egress_load(const char *data_dir, const struct sl_catalogue *cat, struct sl_egress **out,
		   struct sl_err *err);
void sl_egress_free(struct sl_egress *eg);

/* USD per GB sent from zone src to zone dst; source (NULL: not wanted) gets a short text of the
 * price's origin: "same zone", "SOSP'25 artifact", "gcp list: between zones", "aws list:
 * internet", "zones 'mine.json': pair", ... */
double sl_egress_usd_per_gb(const struct sl_egress *eg, const struct sl_catalogue *cat, int src,
			    int dst, char *source, size_t size);

#endif
