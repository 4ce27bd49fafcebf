/* The byte-level tokenizer (token = byte value, vocabulary 256), the token buffer, and the
 * dispatch between tokenizers (tokenizer.h). Invariant: byte tokens are always < 256, so
 * decoding fails only on a token that no byte maps to. */
#include "train/tokenizer.h"

#include <stdlib.h>
#include <string.h>

int sl_token_buf_push(struct sl_token_buf *buf, uint32_t token, struct sl_err *err)
{
	if (buf->count == buf->cap) {
		long long cap = buf->cap ? 2 * buf->cap : 4096;
		uint32_t *data = realloc(buf->data, (size_t)cap * sizeof(uint32_t));
		if (!data)
			return sl_err_set(err, SL_ENOMEM, "cannot grow the token buffer to %lld tokens",
					  cap);
		buf->data = data;
		buf->cap = cap;
	}
	buf->data[buf->count++] = token;
	return 0;
}

void sl_token_buf_free(struct sl_token_buf *buf)
{
	free(buf->data);
	memset(buf, 0, sizeof(*buf));
}

void sl_tokenizer_byte_init(struct sl_tokenizer *t)
{
	memset(t, 0, sizeof(*t));
	t->id = SL_TOKENIZER_BYTE;
	t->vocab = 256;
}

int sl_byte_encode(const char *text, size_t len, struct sl_token_buf *out, struct sl_err *err)
{
	for (size_t i = 0; i < len; i++) {
		int rc = sl_token_buf_push(out, (unsigned char)text[i], err);
		if (rc)
			return rc;
	}
	return 0;
}

int sl_byte_decode(const uint32_t *tokens, long long n, char **text, size_t *len,
		   struct sl_err *err)
{
	char *s = malloc((size_t)n + 1);
	if (!s)
		return sl_err_set(err, SL_ENOMEM, "cannot allocate %lld bytes of text", n + 1);
	for (long long i = 0; i < n; i++) {
		if (tokens[i] > 255) {
			free(s);
			return sl_err_set(err, SL_EINPUT, "token %u at position %lld is not a byte",
					  tokens[i], i);
		}
		s[i] = (char)tokens[i];
	}
	s[n] = '\0';
	*text = s;
	*len = (size_t)n;
	return 0;
}

int sl_tokenizer_encode(const struct sl_tokenizer *t, const char *text, size_t len,
			struct sl_token_buf *out, struct sl_err *err)
{
	if (t->id == SL_TOKENIZER_GPT2)
		return sl_bpe_encode(t->bpe, text, len, out, err);
	return sl_byte_encode(text, len, out, err);
}

int sl_tokenizer_decode(const struct sl_tokenizer *t, const uint32_t *tokens, long long n,
			char **text, size_t *len, struct sl_err *err)
{
	if (t->id == SL_TOKENIZER_GPT2)
		return sl_bpe_decode(t->bpe, tokens, n, text, len, err);
	return sl_byte_decode(tokens, n, text, len, err);
}

void sl_tokenizer_free(struct sl_tokenizer *t)
{
	if (t->bpe)
		sl_bpe_free(t->bpe);
	memset(t, 0, sizeof(*t));
}
