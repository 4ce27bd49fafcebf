/* Zones the simulator cannot tell apart: two zones are interchangeable when every figure the
 * simulator reads about a zone on its own (each GPU type's price there, and the links, bursts,
 * eager limits, measured all-reduces, egress and zone-file origin between two hosts of that
 * zone) is the same in both. A search of a pool whose GPUs all lie in one zone then finds, in
 * the other zone with the same GPU counts, the same plans with the zone renamed, at the same
 * simulated figures: the island search (islands_search.c) searches such islands once.
 * Links between the zone and other zones are not compared: a pool of one zone sends nothing
 * over them. */
#ifndef SL_SEARCH_ZONE_EQUIVALENCE_H
#define SL_SEARCH_ZONE_EQUIVALENCE_H

#include "sim/sim.h"

/* 1 when zones za and zb are interchangeable for single-zone pools under cost model cm. */
int sl_zones_interchangeable(const struct sl_sim_env *env, enum sl_cost_model cm, int za, int zb);

#endif
