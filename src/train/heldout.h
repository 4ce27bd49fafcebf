/* The held-out set a run is evaluated on (`--val-data FILE`): the first windows of a token file,
 * in file order, never shuffled, and the mean cross-entropy of a model on them.
 *
 * Windows are cut as the training loader cuts them (data.h): window w is tokens[w*seq ..
 * w*seq+seq], its first seq tokens the inputs and its last seq the targets. The set is windows
 * 0 .. windows-1, windows = min(--val-windows, (tokens - 1) / seq): the same windows at every
 * evaluation, so two evaluations differ only by the weights. They are run in micro-batches of at
 * most `batch` windows (the last may be shorter).
 *
 * The validation loss is the mean cross-entropy over every target token of every window
 * (windows * seq tokens): each micro-batch's mean loss weighted by its tokens, summed, divided
 * by the set's tokens (sl_heldout_add). `sailor train` and `sailor run` sum the same way, so the
 * two differ only by what their forward passes differ by.
 *
 * Checks (sl_heldout_open): the file is a token file of the training data's tokenizer and
 * vocabulary, every token is below the model's vocabulary, and it holds at least one window.
 *
 * Ownership: the set owns its mapped file and its two token buffers (batch * seq each);
 * sl_heldout_close() releases them.
 */
#ifndef SL_TRAIN_HELDOUT_H
#define SL_TRAIN_HELDOUT_H

#include <stdint.h>

#include "train/data.h"
#include "train/model.h"
#include "util/err.h"

/* --val-windows when not given: 64 windows of the training sequence length. */
#define SL_HELDOUT_DEFAULT_WINDOWS 64

struct sl_heldout {
	struct sl_token_file file;
	int seq, batch;
	long long windows;          /* the windows evaluated */
	long long available;        /* the windows the file holds: (tokens - 1) / seq */
	int32_t *tokens, *targets;  /* one micro-batch: batch * seq each */
};

/* Opens the held-out file at path for sequences of seq tokens, micro-batches of up to batch
 * windows, and at most max_windows windows. train: the training data, whose tokenizer and
 * vocabulary the file must share. Errors name the file and what to change. */
int sl_heldout_open(struct sl_heldout *h, const char *path, const struct sl_token_file *train,
		    int seq, int batch, int model_vocab, long long max_windows, struct sl_err *err);
void sl_heldout_close(struct sl_heldout *h);

/* Micro-batches of the set: ceil(windows / batch). */
long long sl_heldout_microbatches(const struct sl_heldout *h);

/* Target tokens of the set: windows * seq (the denominator of the loss). */
long long sl_heldout_tokens(const struct sl_heldout *h);

/* Micro-batch i (0 <= i < sl_heldout_microbatches): fills h->tokens and h->targets with its
 * windows and describes it (pointing into them, valid until the next call). */
struct sl_gpt_microbatch sl_heldout_microbatch(struct sl_heldout *h, long long i);

/* What a micro-batch adds to the loss sum: its mean loss times its tokens. */
double sl_heldout_add(const struct sl_gpt_microbatch *mb, double mean_loss);

/* Single process: the mean loss of gpt, a stage of every layer (0 .. N+1) built for
 * micro-batches of at least h->batch windows of h->seq tokens, on the whole set. Forward only:
 * it reads the parameters' values and writes no value, gradient or optimizer moment; it
 * overwrites the selected slot's activations, which the next step's forward rewrites. */
int sl_heldout_loss(struct sl_heldout *h, struct sl_gpt *gpt, double *loss, struct sl_err *err);

#endif
