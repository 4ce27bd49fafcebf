/* src/train/: one process's training (model, kernels, optimizer, data, checkpoints); the executor of plans across ranks is src/runtime/.
 *
 * What the folder offers, by header:
 *   trainer.h      sl_train_run(): the whole `sailor train` loop (data, steps, checkpoints,
 *                  progress lines / JSON)
 *   model.h        struct sl_gpt: a stage = contiguous range of plan layers, forward/backward of
 *                  a micro-batch through it; memory accounting
 *   gpt_layers.h   struct sl_gpt_layer: embedding (layer 0), transformer block (1..N), final
 *                  norm + tied LM head + loss (N+1); each runs forward(input) -> output and
 *                  backward(grad_output) -> grad_input on its own, holds a 1/tp shard
 *   param.h        struct sl_param: named tensors ("layer3.attn.qkv.weight") with gradient,
 *                  AdamW moments and shard mapping; seed-deterministic initialisation
 *   optimizer.h    AdamW + global gradient-norm clipping (torch.optim.AdamW semantics)
 *   lr_schedule.h  linear warm-up + cosine decay
 *   data.h         token files (format documented there) and the data loader
 *   heldout.h      the held-out set of --val-data and a whole model's mean loss on it
 *   tokenizer.h    byte-level and GPT-2 BPE tokenizers
 *   checkpoint.h   plan-independent checkpoints: atomic, CRC-32 checked, resumable
 *   safetensors.h  safetensors export/import of weights
 *   rng.h          counter-based and sequential generators from the seed
 *   crc32.h        the checksum of checkpoints
 *   cpu/kernels.h  CPU kernels: sgemm (OpenBLAS), LayerNorm, attention, GELU, embedding,
 *                  softmax cross-entropy, AdamW; OpenMP threads
 * Distribution (MPI pipelines and tensor parallelism) builds on model.h and gpt_layers.h; see
 * gpt_layers.h for how the tied embedding and tensor-parallel shards are handled.
 */
#ifndef SL_TRAIN_TRAIN_H
#define SL_TRAIN_TRAIN_H

#include "train/checkpoint.h"
#include "train/data.h"
#include "train/gpt_layers.h"
#include "train/heldout.h"
#include "train/lr_schedule.h"
#include "train/model.h"
#include "train/optimizer.h"
#include "train/param.h"
#include "train/rng.h"
#include "train/safetensors.h"
#include "train/tokenizer.h"
#include "train/trainer.h"

#endif
