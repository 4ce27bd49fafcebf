/* Links nobody measured: what a link between two zones of the catalogue is like when neither the
 * SOSP'25 artifact's fits (data/network/zone_bandwidths.json) nor the user's `sailor profile
 * --network` measured it, by class, from public measurements.
 *
 * Classes (sl_link_model_class_of), from the zones' regions:
 *   same zone, same region              the artifact's fits of the GPU types (network.c): a
 *                                       zone's own GPU network, and the links between the
 *                                       zones of one region, measured in us-central1;
 *   same continent, across continents   another region of the same provider;
 *   across providers, same continent / across continents.
 * For the last four, data/network/link_classes.json gives each class's bandwidth (the median
 * iperf3 throughput of Skyplane's grid between AWS, GCP and Azure regions, NSDI'23) and its
 * round trip as a line in the great-circle distance (least squares over Skyplane's ping grid),
 * and the same figures for the reference pair, us-central1 <-> us-west1, which the artifact also
 * measured between A100 nodes. A class link is the artifact's fit between us-central1 and
 * us-west1-b (the reference: network.c averages its measured A100-40 fits at the count) scaled
 * by the class's bandwidth over the reference's, with the one-way time the class's round trip
 * at that distance adds to the reference's (half the difference, at least 0) as the fit's
 * latency. Distance sets the latency only: in Skyplane's data it explains the round trip
 * within a class (r2 0.38 to 0.88) but not the bandwidth (r2 at most 0.12).
 *
 * The user's links (the "links" of zone files) name two zones or regions with a bandwidth and a
 * one-way latency: a flat fit at that bandwidth plus that latency, both ways.
 *
 * Ownership: sl_link_model_load allocates; sl_link_model_free frees. Lookups allocate nothing.
 */
#ifndef SL_CLUSTER_LINK_MODEL_H
#define SL_CLUSTER_LINK_MODEL_H

#include "cluster/catalogue.h"
#include "cluster/network.h"
#include "util/err.h"

#define SL_LINK_CLASSES_SCHEMA "sailor.link_classes/1"

enum sl_link_class {
	SL_LINK_CLASS_SAME_ZONE,
	SL_LINK_CLASS_SAME_REGION,
	SL_LINK_CLASS_SAME_CONTINENT,
	SL_LINK_CLASS_ACROSS_CONTINENTS,
	SL_LINK_CLASS_PROVIDERS_SAME_CONTINENT,
	SL_LINK_CLASS_PROVIDERS_ACROSS_CONTINENTS,
	SL_LINK_CLASSES
};

struct sl_link_model; /* opaque */

/* The class of the link between two zones of cat. */
enum sl_link_class sl_link_model_class_of(const struct sl_catalogue *cat, int za, int zb);
/* "same-zone", "same-region", "same-continent", "across-continents",
 * "across-providers-same-continent", "across-providers-across-continents". */
const char *sl_link_model_class_name(enum sl_link_class c);

/* Loads data/network/link_classes.json under data_dir (NULL = sl_paths_data_dir()) and the links of
 * the zone files. Errors name the file and the JSON path. */
int sl_link_model_load(const char *data_dir, const struct sl_catalogue *cat,
		       struct sl_link_model **out, struct sl_err *err);
void sl_link_model_free(struct sl_link_model *lm);

/* The artifact's fits the classes scale: between the zones of two regions, of one GPU type
 * (link_classes.json "reference.sosp25_fits"). Strings live as long as lm. */
void sl_link_model_reference(const struct sl_link_model *lm, const char **gpu,
			     const char **region_a, const char **region_b);

/* The class link between za and zb (a class from SAME_CONTINENT on) from the reference fit ref
 * at the same GPU count: out = ref scaled, its latency_s set. */
void sl_link_model_class_fit(const struct sl_link_model *lm, const struct sl_catalogue *cat,
			     int za, int zb, const struct sl_link_fit *ref, struct sl_link_fit *out);

/* The user's link between za and zb (or their regions; zones first, the last listed wins):
 * 1 and *out (a flat fit) and *origin (the file) if there is one, else 0. */
int sl_link_model_user_link(const struct sl_link_model *lm, const struct sl_catalogue *cat,
			    int za, int zb, struct sl_link_fit *out, const char **origin);

#endif
