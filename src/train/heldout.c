/* The held-out set and its loss (heldout.h).
 * Invariants: the set is the first `windows` windows of the file whatever the run did before
 * (no loader position, no shuffle); the loss sums each micro-batch's mean weighted by its
 * tokens, so micro-batches of different sizes weigh every token alike. */
#include "train/heldout.h"

#include <stdlib.h>
#include <string.h>

static const char *tokenizer_name(uint32_t id)
{
	static const char *names[] = {"other", "byte", "gpt2"};
	return id <= SL_TOKENIZER_GPT2 ? names[id] : "unknown";
}

/* The file against the training data and the model: the messages say what to change. */
static int check_file(const struct sl_heldout *h, const struct sl_token_file *train, int seq,
		      int model_vocab, struct sl_err *err)
{
	const struct sl_token_file *f = &h->file;
	if (f->tokenizer != train->tokenizer)
		return sl_err_set(err, SL_EINPUT,
				  "validation file '%s' was written with the %s tokenizer, but the "
				  "training data '%s' with the %s tokenizer: its losses would not "
				  "compare; cut both from one text with 'sailor data --val-fraction'",
				  f->path, tokenizer_name(f->tokenizer), train->path,
				  tokenizer_name(train->tokenizer));
	if (f->vocab != train->vocab)
		return sl_err_set(err, SL_EINPUT,
				  "validation file '%s' has vocabulary %u, but the training data '%s' "
				  "has %u: tokenize both with the same vocabulary ('sailor data "
				  "--val-fraction' cuts both from one text)",
				  f->path, f->vocab, train->path, train->vocab);
	if (f->vocab > (uint32_t)model_vocab) {
		uint32_t max = sl_token_file_max(f);
		if (max >= (uint32_t)model_vocab)
			return sl_err_set(err, SL_EINPUT,
					  "validation file '%s' has token %u but the model's "
					  "vocabulary is %d: use a model whose vocab covers the "
					  "tokenizer's %u tokens",
					  f->path, max, model_vocab, f->vocab);
	}
	if (h->available < 1)
		return sl_err_set(err, SL_EINPUT,
				  "validation file '%s' is too short: %lld tokens make no window of "
				  "%d+1 tokens (need at least %d tokens; cut a larger --val-fraction or "
				  "train with a smaller --seq-len)",
				  f->path, f->count, seq, seq + 1);
	return 0;
}

int sl_heldout_open(struct sl_heldout *h, const char *path, const struct sl_token_file *train,
		    int seq, int batch, int model_vocab, long long max_windows, struct sl_err *err)
{
	memset(h, 0, sizeof(*h));
	if (seq <= 0 || batch <= 0 || max_windows <= 0)
		return sl_err_set(err, SL_EINPUT, "held-out set: sequence, micro-batch and windows "
				  "must be positive");
	int rc = sl_token_file_open(&h->file, path, err);
	if (rc)
		return sl_err_prefix(err, "--val-data");
	h->seq = seq;
	h->batch = batch;
	h->available = h->file.count > 0 ? (h->file.count - 1) / seq : 0;
	h->windows = h->available < max_windows ? h->available : max_windows;
	if ((rc = check_file(h, train, seq, model_vocab, err)))
		return rc;
	h->tokens = malloc((size_t)batch * (size_t)seq * sizeof(int32_t));
	h->targets = malloc((size_t)batch * (size_t)seq * sizeof(int32_t));
	if (!h->tokens || !h->targets)
		return sl_err_set(err, SL_ENOMEM, "out of memory for the held-out micro-batch");
	return 0;
}

void sl_heldout_close(struct sl_heldout *h)
{
	sl_token_file_close(&h->file);
	free(h->tokens);
	free(h->targets);
	h->tokens = h->targets = NULL;
}

long long sl_heldout_microbatches(const struct sl_heldout *h)
{
	return (h->windows + h->batch - 1) / h->batch;
}

long long sl_heldout_tokens(const struct sl_heldout *h)
{
	return h->windows * h->seq;
}

struct sl_gpt_microbatch sl_heldout_microbatch(struct sl_heldout *h, long long i)
{
	long long first = i * h->batch;
	long long left = h->windows - first;
	int count = left < h->batch ? (int)left : h->batch;
	int T = h->seq;
	for (int b = 0; b < count; b++) {
		long long start = (first + b) * T;
		for (int t = 0; t < T; t++) {
			h->tokens[b * T + t] = (int32_t)sl_token_file_get(&h->file, start + t);
			h->targets[b * T + t] = (int32_t)sl_token_file_get(&h->file, start + t + 1);
		}
	}
	return (struct sl_gpt_microbatch){count, T, h->tokens, h->targets};
}

double sl_heldout_add(const struct sl_gpt_microbatch *mb, double mean_loss)
{
	return mean_loss * (double)mb->batch * (double)mb->seq;
}

int sl_heldout_loss(struct sl_heldout *h, struct sl_gpt *gpt, double *loss, struct sl_err *err)
{
	if (gpt->first != 0 || gpt->last != gpt->model.num_blocks + 1)
		return sl_err_set(err, SL_EINPUT, "held-out loss: the model must hold every layer");
	double sum = 0.0;
	for (long long i = 0; i < sl_heldout_microbatches(h); i++) {
		struct sl_gpt_microbatch mb = sl_heldout_microbatch(h, i);
		double mb_loss = 0.0;
		int rc = sl_gpt_forward(gpt, &mb, NULL, &mb_loss, err);
		if (rc)
			return sl_err_prefix(err, "held-out micro-batch %lld", i);
		sum += sl_heldout_add(&mb, mb_loss);
	}
	*loss = sum / (double)sl_heldout_tokens(h);
	return 0;
}
