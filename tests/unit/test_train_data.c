/* Unit tests for token files and the data loader (src/train/data.h): round trips at both token
 * widths, every kind of damaged file named clearly, windows and wrap-around, resuming from a
 * position, the shuffle being a seed-determined permutation, and too-short data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "train/data.h"

static char path[256];

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/sailor_test_tokens_%d.bin", (int)getpid());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void write_raw(const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	fclose(f);
}

static void round_trip_both_widths(void **state)
{
	(void)state;
	uint32_t tokens[5] = {0, 1, 255, 65535, 7};
	struct sl_err err = {0};
	struct sl_token_file f;
	assert_int_equal(sl_token_file_write(path, tokens, 5, 65536, SL_TOKENIZER_BYTE, &err), 0);
	assert_int_equal(sl_token_file_open(&f, path, &err), 0);
	assert_int_equal(f.width, 2);
	assert_int_equal(f.count, 5);
	assert_int_equal(f.vocab, 65536);
	for (int i = 0; i < 5; i++)
		assert_int_equal(sl_token_file_get(&f, i), tokens[i]);
	assert_int_equal(sl_token_file_max(&f), 65535);
	sl_token_file_close(&f);

	uint32_t big[3] = {50256, 70000, 3};
	assert_int_equal(sl_token_file_write(path, big, 3, 100000, SL_TOKENIZER_GPT2, &err), 0);
	assert_int_equal(sl_token_file_open(&f, path, &err), 0);
	assert_int_equal(f.width, 4);
	assert_int_equal(f.tokenizer, SL_TOKENIZER_GPT2);
	assert_int_equal(sl_token_file_get(&f, 1), 70000);
	sl_token_file_close(&f);

	/* a token at or above the vocabulary is refused when writing */
	assert_int_equal(sl_token_file_write(path, big, 3, 60000, SL_TOKENIZER_GPT2, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "token 70000 at position 1"));
}

static void damaged_files_are_named(void **state)
{
	(void)state;
	uint32_t tokens[4] = {1, 2, 3, 4};
	struct sl_err err = {0};
	struct sl_token_file f;
	assert_int_equal(sl_token_file_write(path, tokens, 4, 256, SL_TOKENIZER_BYTE, &err), 0);
	unsigned char raw[64];
	FILE *in = fopen(path, "rb");
	size_t n = fread(raw, 1, sizeof(raw), in);
	fclose(in);
	assert_int_equal(n, 40);

	write_raw(raw, 39); /* one byte short */
	assert_int_equal(sl_token_file_open(&f, path, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "truncated"));
	assert_non_null(strstr(err.msg, path));

	unsigned char longer[41];
	memcpy(longer, raw, 40);
	longer[40] = 0;
	write_raw(longer, 41);
	assert_int_equal(sl_token_file_open(&f, path, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "bytes after"));

	unsigned char bad[40];
	memcpy(bad, raw, 40);
	bad[0] = 'X';
	write_raw(bad, 40);
	assert_int_equal(sl_token_file_open(&f, path, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "bad magic"));

	memcpy(bad, raw, 40);
	bad[8] = 9;
	write_raw(bad, 40);
	assert_int_equal(sl_token_file_open(&f, path, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "version 9"));

	memcpy(bad, raw, 40);
	bad[12] = 3;
	write_raw(bad, 40);
	assert_int_equal(sl_token_file_open(&f, path, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "token width 3"));

	write_raw("hello", 5);
	assert_int_equal(sl_token_file_open(&f, path, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "shorter than the 32-byte header"));

	assert_int_equal(sl_token_file_open(&f, "/nonexistent/t.bin", &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "'/nonexistent/t.bin'"));
}

static void loader_windows_wrap_and_seek(void **state)
{
	(void)state;
	uint32_t tokens[23];
	for (int i = 0; i < 23; i++)
		tokens[i] = (uint32_t)i;
	struct sl_err err = {0};
	struct sl_token_file f;
	struct sl_data_loader l;
	assert_int_equal(sl_token_file_write(path, tokens, 23, 256, SL_TOKENIZER_BYTE, &err), 0);
	assert_int_equal(sl_token_file_open(&f, path, &err), 0);
	/* seq 4: windows (23-1)/4 = 5, micro-batch 2 */
	assert_int_equal(sl_data_loader_init(&l, &f, 2, 4, 256, 0, 1, &err), 0);
	assert_int_equal(l.windows, 5);
	int32_t x[8], y[8];
	int expect_first[] = {0, 8, 16, 4, 12};
	for (int step = 0; step < 5; step++) {
		sl_data_loader_next(&l, x, y);
		assert_int_equal(x[0], expect_first[step]);
		for (int i = 0; i < 8; i++)
			assert_int_equal(y[i], x[i] + 1);
	}
	/* windows 0..4 then wrap: step 3 took windows 4 (epoch 0) and 0 (epoch 1); the next epoch
	 * starts lazily, on the next draw */
	assert_int_equal(l.epoch, 1);
	assert_int_equal(l.next, 5);
	/* seek reproduces the same stream */
	struct sl_data_loader l2;
	assert_int_equal(sl_data_loader_init(&l2, &f, 2, 4, 256, 0, 1, &err), 0);
	assert_int_equal(sl_data_loader_seek(&l2, 0, 3, &err), 0);
	sl_data_loader_next(&l2, x, y);
	assert_int_equal(x[0], 12);
	assert_int_equal(x[4], 16);
	assert_int_equal(sl_data_loader_seek(&l2, 0, 9, &err), SL_EINPUT);
	sl_data_loader_free(&l);
	sl_data_loader_free(&l2);

	/* too short for one micro-batch */
	assert_int_equal(sl_data_loader_init(&l, &f, 6, 4, 256, 0, 1, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "too short"));
	assert_non_null(strstr(err.msg, "need at least 25 tokens"));
	sl_token_file_close(&f);
}

static void shuffle_is_a_seeded_permutation(void **state)
{
	(void)state;
	enum { N = 801 };
	uint32_t tokens[N];
	for (int i = 0; i < N; i++)
		tokens[i] = (uint32_t)i;
	struct sl_err err = {0};
	struct sl_token_file f;
	assert_int_equal(sl_token_file_write(path, tokens, N, 1024, SL_TOKENIZER_OTHER, &err), 0);
	assert_int_equal(sl_token_file_open(&f, path, &err), 0);
	struct sl_data_loader a, b, c;
	assert_int_equal(sl_data_loader_init(&a, &f, 1, 4, 1024, 1, 7, &err), 0);
	assert_int_equal(sl_data_loader_init(&b, &f, 1, 4, 1024, 1, 7, &err), 0);
	assert_int_equal(sl_data_loader_init(&c, &f, 1, 4, 1024, 1, 8, &err), 0);
	int seen[200] = {0}, same_as_c = 0, in_order = 0;
	for (int w = 0; w < 200; w++) {
		int32_t xa[4], ya[4], xb[4], yb[4], xc[4], yc[4];
		sl_data_loader_next(&a, xa, ya);
		sl_data_loader_next(&b, xb, yb);
		sl_data_loader_next(&c, xc, yc);
		assert_memory_equal(xa, xb, sizeof(xa));
		seen[xa[0] / 4]++;
		same_as_c += xa[0] == xc[0];
		in_order += xa[0] == 4 * w;
	}
	for (int w = 0; w < 200; w++)
		assert_int_equal(seen[w], 1); /* every window exactly once per epoch */
	assert_true(same_as_c < 20 && in_order < 20);
	/* a seek regenerates the epoch's order */
	struct sl_data_loader d;
	assert_int_equal(sl_data_loader_init(&d, &f, 1, 4, 1024, 1, 7, &err), 0);
	assert_int_equal(sl_data_loader_seek(&d, 1, 5, &err), 0);
	for (int w = 0; w < 5; w++) {
		int32_t x[4], y[4];
		sl_data_loader_next(&a, x, y);
	}
	int32_t xa[4], ya[4], xd[4], yd[4];
	sl_data_loader_next(&a, xa, ya);
	sl_data_loader_next(&d, xd, yd);
	assert_memory_equal(xa, xd, sizeof(xa));
	sl_data_loader_free(&a);
	sl_data_loader_free(&b);
	sl_data_loader_free(&c);
	sl_data_loader_free(&d);
	sl_token_file_close(&f);
}

static void vocabulary_is_checked(void **state)
{
	(void)state;
	uint32_t tokens[40];
	for (int i = 0; i < 40; i++)
		tokens[i] = (uint32_t)(i * 6);
	struct sl_err err = {0};
	struct sl_token_file f;
	struct sl_data_loader l;
	assert_int_equal(sl_token_file_write(path, tokens, 40, 256, SL_TOKENIZER_BYTE, &err), 0);
	assert_int_equal(sl_token_file_open(&f, path, &err), 0);
	assert_int_equal(sl_data_loader_init(&l, &f, 1, 8, 230, 0, 1, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "has token 234 but the model's vocabulary is 230"));
	/* a model vocabulary below the file's but above every token is fine */
	assert_int_equal(sl_data_loader_init(&l, &f, 1, 8, 235, 0, 1, &err), 0);
	sl_data_loader_free(&l);
	sl_token_file_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_both_widths),
		cmocka_unit_test(damaged_files_are_named),
		cmocka_unit_test(loader_windows_wrap_and_seek),
		cmocka_unit_test(shuffle_is_a_seeded_permutation),
		cmocka_unit_test(vocabulary_is_checked),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
