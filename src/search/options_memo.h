/* Whether the memory options change which replica kinds fit a partition, kept by a search state
 * for its later work items and searches.
 *
 * The search with memory options skips a partition where every replica kind with a time fits
 * without options however many pipelines and micro-batches (shape_skip.c,
 * sl_search_options_change_no_shape). The answer depends on the environment and the room it
 * keeps (the island search's reserve), the cost model, the micro-batch size, the partition and
 * which kinds (GPU type, TP degree) the zones searched offer; every zone set of a search and
 * every island search asked it again, a tenth of a Fig. 10 `--sync auto` plan's
 * instructions. A partition is named by its depth and index among that depth's candidates for
 * the types with layer times (partition_cache.h): the candidates are a function of the rest of
 * the key.
 */
#ifndef SL_SEARCH_OPTIONS_MEMO_H
#define SL_SEARCH_OPTIONS_MEMO_H

struct sl_options_key {
	unsigned long long env_serial;  /* sl_sim_env.serial */
	double reserve_param_copies;    /* sl_sim_env.reserve_param_copies */
	unsigned long long kinds;       /* 3 bits per GPU type: how many TP degrees it offers */
	int cost_model;
	int micro_batch;
	int num_stages;
	int partition_index;            /* among the depth's candidates (partition_cache.h) */
	unsigned types;                 /* the types with layer times, as partition_cache.h keys */
};

struct sl_options_memo;

/* NULL when out of memory (the search then answers every time). */
struct sl_options_memo *sl_options_memo_new(void);
void sl_options_memo_free(struct sl_options_memo *memo);

/* The answer kept under key (0 or 1); -1 when none is. */
int sl_options_memo_get(const struct sl_options_memo *memo, const struct sl_options_key *key);

/* Keeps answer under key (out of memory: keeps nothing). */
void sl_options_memo_put(struct sl_options_memo *memo, const struct sl_options_key *key,
			 int answer);

#endif
