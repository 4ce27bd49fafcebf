/* Unit tests for the tokenizers (src/train/tokenizer.h): the byte tokenizer's round trip, and
 * GPT-2 BPE on a hand-made vocabulary (the 256 byte symbols as ids 0..255 plus a few merges)
 * where the expected tokens follow from the pre-tokenisation regex and the merge ranks by hand;
 * decoding restores any bytes, invalid UTF-8 included; broken vocabulary files are named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "train/tokenizer.h"

static char enc_path[256], merges_path[256];

/* GPT-2's bytes_to_unicode(): byte -> code point. */
static int byte_cp(int b)
{
	int n = 0;
	for (int x = 0; x < 256; x++) {
		int printable = (x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE);
		if (x == b)
			return printable ? x : 256 + n;
		if (!printable)
			n++;
	}
	return -1;
}

static void put_cp(FILE *f, int cp)
{
	if (cp == '"' || cp == '\\')
		fprintf(f, "\\%c", cp);
	else if (cp < 0x80)
		fputc(cp, f);
	else
		fprintf(f, "%c%c", 0xC0 | (cp >> 6), 0x80 | (cp & 0x3F));
}

/* Merges, best first; Ġ is the space byte's symbol. New tokens get ids 256, 257, ... */
static const char *merges[] = {"H e", "l l", "He ll", "Hell o", "Ġ w", "o r", "Ġw or", "l d",
			       "Ġwor ld", "' s", "2 0", "20 2", "i t"};

static int setup(void **state)
{
	(void)state;
	snprintf(enc_path, sizeof(enc_path), "/tmp/sailor_test_encoder_%d.json", (int)getpid());
	snprintf(merges_path, sizeof(merges_path), "/tmp/sailor_test_vocab_%d.bpe", (int)getpid());
	FILE *f = fopen(enc_path, "w");
	fputc('{', f);
	for (int b = 0; b < 256; b++) {
		fputs(b ? ",\"" : "\"", f);
		put_cp(f, byte_cp(b));
		fprintf(f, "\":%d", b);
	}
	int n = (int)(sizeof(merges) / sizeof(merges[0]));
	for (int i = 0; i < n; i++) {
		fputs(",\"", f);
		for (const char *p = merges[i]; *p; p++)
			if (*p != ' ')
				fputc(*p, f);
		fprintf(f, "\":%d", 256 + i);
	}
	fputs("}", f);
	fclose(f);
	f = fopen(merges_path, "w");
	fputs("#version: 0.2\n", f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s\n", merges[i]);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(enc_path);
	unlink(merges_path);
	return 0;
}

static void byte_round_trip(void **state)
{
	(void)state;
	struct sl_tokenizer t;
	sl_tokenizer_byte_init(&t);
	assert_int_equal(t.vocab, 256);
	const char text[] = "caf\xc3\xa9\n\x00\xff";
	struct sl_token_buf buf = {0};
	struct sl_err err = {0};
	assert_int_equal(sl_tokenizer_encode(&t, text, sizeof(text) - 1, &buf, &err), 0);
	assert_int_equal(buf.count, 8);
	assert_int_equal(buf.data[3], 0xc3);
	assert_int_equal(buf.data[7], 0xff);
	char *back;
	size_t len;
	assert_int_equal(sl_tokenizer_decode(&t, buf.data, buf.count, &back, &len, &err), 0);
	assert_int_equal(len, 8);
	assert_memory_equal(back, text, 8);
	free(back);
	uint32_t bad = 300;
	assert_int_equal(sl_tokenizer_decode(&t, &bad, 1, &back, &len, &err), SL_EINPUT);
	sl_token_buf_free(&buf);
	sl_tokenizer_free(&t);
}

static void expect_tokens(struct sl_tokenizer *t, const char *text, const uint32_t *want, int n)
{
	struct sl_token_buf buf = {0};
	struct sl_err err = {0};
	assert_int_equal(sl_tokenizer_encode(t, text, strlen(text), &buf, &err), 0);
	if (buf.count != n) {
		for (long long i = 0; i < buf.count; i++)
			fprintf(stderr, "%u ", buf.data[i]);
		fprintf(stderr, "\n");
	}
	assert_int_equal(buf.count, n);
	assert_memory_equal(buf.data, want, (size_t)n * sizeof(uint32_t));
	char *back;
	size_t len;
	assert_int_equal(sl_tokenizer_decode(t, buf.data, buf.count, &back, &len, &err), 0);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(back, text, len);
	free(back);
	sl_token_buf_free(&buf);
}

static void gpt2_bpe_hand_made_vocabulary(void **state)
{
	(void)state;
	struct sl_tokenizer t;
	struct sl_err err = {0};
	assert_int_equal(sl_tokenizer_gpt2_load(&t, enc_path, merges_path, &err), 0);
	assert_int_equal(t.vocab, 256 + 13);
	/* "Hello" -> Hello (259); " world" -> Ġworld (264) */
	const uint32_t a[] = {259, 264};
	expect_tokens(&t, "Hello world", a, 2);
	/* "it's": pieces "it" (268) and "'s" (265) */
	const uint32_t b[] = {268, 265};
	expect_tokens(&t, "it's", b, 2);
	/* " 2024" is one piece (optional space + digits): Ġ, "202" (267), "4" */
	const uint32_t c[] = {' ', 267, '4'}; /* ids = byte values: Ġ is 32 */
	expect_tokens(&t, " 2024", c, 3);
	/* "a  b": "a", " " (the run keeps its last space for the word), " b" -> Ġ then b */
	const uint32_t d[] = {'a', ' ', ' ', 'b'};
	expect_tokens(&t, "a  b", d, 4);
	/* "!\n\nHe": "!" ; "\n" ; "\n" ; "He" (256) */
	const uint32_t e[] = {'!', '\n', '\n', 256};
	expect_tokens(&t, "!\n\nHe", e, 4);
	/* "x's's" : contraction only at a piece start: "x", "'s", "'s" */
	const uint32_t f[] = {'x', 265, 265};
	expect_tokens(&t, "x's's", f, 3);
	/* UTF-8 and invalid bytes survive the round trip */
	struct sl_token_buf buf = {0};
	const char odd[] = "caf\xc3\xa9 \xff\xfe z\xe6\x9d\xb1";
	assert_int_equal(sl_tokenizer_encode(&t, odd, sizeof(odd) - 1, &buf, &err), 0);
	char *back;
	size_t len;
	assert_int_equal(sl_tokenizer_decode(&t, buf.data, buf.count, &back, &len, &err), 0);
	assert_int_equal(len, sizeof(odd) - 1);
	assert_memory_equal(back, odd, len);
	free(back);
	sl_token_buf_free(&buf);
	sl_tokenizer_free(&t);
}

static void broken_vocabulary_files(void **state)
{
	(void)state;
	struct sl_tokenizer t;
	struct sl_err err = {0};
	char bad[300];
	snprintf(bad, sizeof(bad), "/tmp/sailor_test_bad_%d.bpe", (int)getpid());
	FILE *f = fopen(bad, "w");
	fputs("#version: 0.2\nH e\nnospace\n", f);
	fclose(f);
	assert_int_equal(sl_tokenizer_gpt2_load(&t, enc_path, bad, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "line 3"));
	assert_non_null(strstr(err.msg, bad));
	f = fopen(bad, "w");
	fputs("{\"a\": -1}", f);
	fclose(f);
	assert_int_equal(sl_tokenizer_gpt2_load(&t, bad, merges_path, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "token 'a'"));
	assert_int_equal(sl_tokenizer_gpt2_load(&t, "/nonexistent.json", merges_path, &err),
			 SL_ENOTFOUND);
	unlink(bad);
	/* a merge whose result is missing from encoder.json */
	f = fopen(bad, "w");
	fputs("#version: 0.2\nz q\n", f);
	fclose(f);
	assert_int_equal(sl_tokenizer_gpt2_load(&t, enc_path, bad, &err), 0);
	struct sl_token_buf buf = {0};
	assert_int_equal(sl_tokenizer_encode(&t, "zq", 2, &buf, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "'zq' is not in encoder.json"));
	sl_token_buf_free(&buf);
	sl_tokenizer_free(&t);
	unlink(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(byte_round_trip),
		cmocka_unit_test(gpt2_bpe_hand_made_vocabulary),
		cmocka_unit_test(broken_vocabulary_files),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
