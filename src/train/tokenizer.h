/* Tokenizers that turn text into the tokens of a token file (data.h), and back.
 *
 *  - byte (default): every byte of the UTF-8 text is one token, vocabulary 256. A model with a
 *    larger vocab (padding, e.g. "vocab": 320) accepts these tokens; a smaller one is refused.
 *  - gpt2: GPT-2's byte-level BPE (Radford et al. 2019, section 2.2), from the standard
 *    encoder.json (token string -> id) and vocab.bpe (merges, best first) files, as in OpenAI's
 *    gpt-2/src/encoder.py; tokenizer_bpe.c says how its pre-tokenisation regex is matched.
 *
 * Ownership: sl_tokenizer_free() releases what a loaded tokenizer holds; token buffers own their
 * array (sl_token_buf_free); decoded text is malloc'd for the caller to free().
 */
#ifndef SL_TRAIN_TOKENIZER_H
#define SL_TRAIN_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "train/data.h"
#include "util/err.h"

struct sl_token_buf {
	uint32_t *data;
	long long count, cap;
};

int sl_token_buf_push(struct sl_token_buf *buf, uint32_t token, struct sl_err *err);
void sl_token_buf_free(struct sl_token_buf *buf);

struct sl_bpe; /* tokenizer_bpe.c */

struct sl_tokenizer {
	enum sl_tokenizer_id id;
	uint32_t vocab;
	struct sl_bpe *bpe;   /* gpt2 only (owned) */
};

/* tokenizer_byte.c */
void sl_tokenizer_byte_init(struct sl_tokenizer *t);
int sl_byte_encode(const char *text, size_t len, struct sl_token_buf *out, struct sl_err *err);
int sl_byte_decode(const uint32_t *tokens, long long n, char **text, size_t *len,
		   struct sl_err *err);

/* tokenizer_bpe.c: loads encoder.json and vocab.bpe; errors name the file and line. */
int sl_tokenizer_gpt2_load(struct sl_tokenizer *t, const char *encoder_json_path,
			   const char *vocab_bpe_path, struct sl_err *err);
int sl_bpe_encode(const struct sl_bpe *bpe, const char *text, size_t len,
		  struct sl_token_buf *out, struct sl_err *err);
int sl_bpe_decode(const struct sl_bpe *bpe, const uint32_t *tokens, long long n, char **text,
		  size_t *len, struct sl_err *err);
void sl_bpe_free(struct sl_bpe *bpe);

/* Dispatch on t->id (tokenizer_byte.c). Encoding appends to out. */
int sl_tokenizer_encode(const struct sl_tokenizer *t, const char *text, size_t len,
			struct sl_token_buf *out, struct sl_err *err);
int sl_tokenizer_decode(const struct sl_tokenizer *t, const uint32_t *tokens, long long n,
			char **text, size_t *len, struct sl_err *err);
void sl_tokenizer_free(struct sl_tokenizer *t);

#endif
