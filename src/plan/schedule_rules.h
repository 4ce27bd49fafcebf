/* What the schedule builder (schedule.c) and its checker (schedule_check.c) share: the rules
 * that define a correct schedule — which peers a rank's transfers have, what a valid role table
 * is — so that the checker judges lists by the same rules, stated once. Internal to src/runtime/. */
#ifndef SL_PLAN_SCHEDULE_RULES_H
#define SL_PLAN_SCHEDULE_RULES_H

#include <stddef.h>

#include "plan/roles.h"
#include "plan/schedule.h"
#include "util/err.h"

/* Which peer list of a rank. */
enum sl_peer_list { ACT_SRC, ACT_DST, GRAD_SRC, GRAD_DST };

static inline int sl_schedule_min_int(int a, int b) { return a < b ? a : b; }

/* Refuses a role table the peer rules would index out of bounds with (hand-made tables too). */
int sl_schedule_check_table(const struct sl_role_table *tb, struct sl_err *err);

/* The world ranks of one of ro's peer lists into out (room for SL_SCHEDULE_MAX_TP); returns how
 * many (0 when the neighbour stage does not exist or this TP rank has nobody to send to). */
int sl_schedule_peers_of(const struct sl_role_table *tb, const struct sl_role *ro,
			 enum sl_peer_list w, int *out);

/* "rank R (stage k of P, pipeline j, tp rank t of T)" into buf. */
const char *sl_schedule_role_text(const struct sl_role_table *tb, int r, char *buf,
				  size_t size);

int sl_instr_is_recv(enum sl_instr_op op);
int sl_instr_is_send(enum sl_instr_op op);
enum sl_msg_kind sl_instr_msg_kind(enum sl_instr_op op);

#endif
