/* Checkpoints: everything needed to continue training exactly, independent of any plan.
 *
 * File "<dir>/step-<8-digit step>.ckpt", all integers little-endian:
 *   offset   size  field
 *   0        8     magic "SLCKPT\0\0"
 *   8        4     format version, 1
 *   12       4     0 (reserved)
 *   16       8     metadata length M
 *   24       M     metadata, UTF-8 JSON padded with spaces so the data starts at a multiple of 64:
 *                  {"schema": "sailor.checkpoint/1", "step": S,
 *                   "model": {name, layers, hidden, heads, ffn_hidden, seq_len, vocab},
 *                   "data": {"path", "tokens", "seq_len", "epoch", "next_window"},
 *                   "rng": {"seed": s},            (every generator derives from seed + counters)
 *                   "train": {...hyper-parameters, for the record...},
 *                   "tensors": {"<name>": {"shape": [..], "offset": byte offset in the data}}}
 *   24+M     ...   for each tensor in metadata order: value, exp_avg, exp_avg_sq, each
 *                  numel fp32 values (the whole tensor, not a shard)
 *   end-16   4     CRC-32 (crc32.h) of every byte before it
 *   end-12   4     0 (reserved)
 *   end-8    8     end marker "SLCKEND\0"
 * Gradients are not stored: a checkpoint is taken between optimizer steps, when they are zero.
 *
 * Writing is atomic: a temporary ".step-<n>.ckpt.tmp" in the same directory is written,
 * fsync'd, renamed over the final name, and the directory fsync'd; then all but the newest
 * `keep` checkpoints are removed, with any temporary file a crashed writer left. A crash leaves either the new file complete or the old ones
 * untouched. Reading verifies the end marker (truncation), the CRC (corruption), the model's
 * hyper-parameters and every tensor's shape before the first byte is copied into the model, so
 * a bad file never half-loads.
 *
 * A stage (model.h) saves/loads the tensors it holds; tensors of other stages in a file are
 * ignored, so any plan can continue from any checkpoint. Saving from a tensor-parallel shard
 * (tp > 1) is refused: whole tensors must be gathered first.
 */
#ifndef SL_TRAIN_CHECKPOINT_H
#define SL_TRAIN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "train/model.h"
#include "util/err.h"

struct sl_checkpoint_state {
	long long step;            /* optimizer steps completed */
	long long data_epoch;      /* data loader position (data.h) */
	long long data_next;
	int data_seq;              /* window length the position is counted in */
	long long data_tokens;     /* token count of the data file */
	char data_path[4096];
	uint64_t seed;
	json_t *train;             /* hyper-parameters: borrowed when saving; a new reference the
				      caller json_decref()s after loading (may be NULL) */
};

/* Writes a checkpoint of gpt and st into dir (created if missing); keeps the newest `keep`
 * (>= 1) checkpoints. path_out (may be NULL) receives the file's path. */
int sl_checkpoint_save(const char *dir, const struct sl_gpt *gpt, const struct sl_checkpoint_state *st,
		       int keep, char *path_out, size_t path_size, struct sl_err *err);

/* Verifies and loads one checkpoint file into gpt (values and moments) and st. */
int sl_checkpoint_load(const char *path, struct sl_gpt *gpt, struct sl_checkpoint_state *st,
		       struct sl_err *err);

/* Loads the newest valid checkpoint of dir. Each newer one that is damaged (truncated,
 * corrupt, unreadable) is renamed to "<name>.damaged" with a warning (sl_log_warn), so that it
 * stops shadowing the good one and is never counted by pruning. A checkpoint of another model
 * stops the search with an error. SL_ENOTFOUND if dir holds no checkpoint; if every one is
 * damaged, the error of the newest. path_out receives the file loaded. */
int sl_checkpoint_load_latest(const char *dir, struct sl_gpt *gpt, struct sl_checkpoint_state *st,
			      char *path_out, size_t path_size, struct sl_err *err);

/* Steps of the checkpoints in dir, newest first (malloc'd array the caller frees; *count may be
 * 0). A missing directory counts as empty. */
int sl_checkpoint_list(const char *dir, long long **steps, int *count, struct sl_err *err);

/* Before a job starts: the model of the checkpoint a resume from dir would load (the newest
 * whole one) against `model`; 0 when they match or dir holds none. The message names the
 * hyper-parameter that differs. */
int sl_checkpoint_check_model_latest(const char *dir, const struct sl_model_config *model,
				     struct sl_err *err);

/* "<dir>/step-%08lld.ckpt" */
void sl_checkpoint_path(char *buf, size_t size, const char *dir, long long step);

#endif
