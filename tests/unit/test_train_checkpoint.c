/* Unit tests for checkpoints and safetensors (src/train/checkpoint.h, safetensors.h, crc32.h):
 * round trip of weights, moments and state; a corrupt or truncated newest checkpoint gives a
 * clear error, is set aside, and the previous one loads; a checkpoint of another model is
 * refused; pruning keeps the newest N; safetensors round trip and bad files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "train/checkpoint.h"
#include "train/cpu/kernels.h"
#include "train/crc32.h"
#include "train/safetensors.h"

static char base[200], dir[256];

static struct sl_model_config tiny(void)
{
	struct sl_model_config m = {0};
	snprintf(m.name, sizeof(m.name), "tiny");
	m.num_blocks = 2;
	m.hidden = 8;
	m.heads = 2;
	m.ffn_hidden = 32;
	m.seq_len = 6;
	m.vocab = 13;
	return m;
}

static void make_model(struct sl_gpt *g, uint64_t seed)
{
	struct sl_model_config m = tiny();
	struct sl_err err = {0};
	assert_int_equal(sl_gpt_init(g, &m, 0, 3, 1, 6, 1, 0, NULL, 1, &err), 0);
	sl_gpt_init_weights(g, seed);
	for (int i = 0; i < g->param_count; i++)
		for (long long k = 0; k < g->params[i]->numel; k++) {
			g->params[i]->exp_avg[k] = (float)(seed + (uint64_t)k) * 1e-3f;
			g->params[i]->exp_avg_sq[k] = (float)(i + 1) * 1e-4f;
		}
}

static int setup(void **state)
{
	(void)state;
	assert_int_equal(sl_cpu_set_threads(1, NULL), 0);
	snprintf(base, sizeof(base), "/tmp/sailor_test_ckpt_%d", (int)getpid());
	snprintf(dir, sizeof(dir), "%s/sub", base);
	return 0;
}

static void remove_dir(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

static int teardown(void **state)
{
	(void)state;
	remove_dir();
	return 0;
}

static struct sl_checkpoint_state state_at(long long step)
{
	struct sl_checkpoint_state st = {.step = step, .data_epoch = 2, .data_next = 17, .data_seq = 6,
				   .data_tokens = 1000, .seed = 99};
	snprintf(st.data_path, sizeof(st.data_path), "tokens.bin");
	return st;
}

static void crc_known_value(void **state)
{
	(void)state;
	assert_int_equal(sl_crc32(0, "123456789", 9), 0xCBF43926u);
	uint32_t a = sl_crc32(0, "1234", 4);
	assert_int_equal(sl_crc32(a, "56789", 5), 0xCBF43926u);
	assert_int_equal(sl_crc32(0, "", 0), 0);
}

/* The folded CRC (where the CPU has carry-less multiplication) equals slicing-by-8 on every
 * length around its 16- and 64-byte blocks, at every alignment, continuing any register. */
static void crc_folded_equals_portable(void **state)
{
	(void)state;
	enum { SIZE = 70000 };
	unsigned char *buf = malloc(SIZE);
	assert_non_null(buf);
	uint32_t x = 12345;
	for (int i = 0; i < SIZE; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (unsigned char)(x >> 16);
	}
	for (size_t len = 0; len < 400; len++)
		for (size_t off = 0; off < 16; off += 5) {
			uint32_t start = (uint32_t)(len * 2654435761u);
			assert_int_equal(sl_crc32(start, buf + off, len),
					 sl_crc32_portable(start, buf + off, len));
		}
	assert_int_equal(sl_crc32(7, buf + 3, SIZE - 3), sl_crc32_portable(7, buf + 3, SIZE - 3));
	uint32_t half = sl_crc32(0, buf, SIZE / 2);
	assert_int_equal(sl_crc32(half, buf + SIZE / 2, SIZE - SIZE / 2), sl_crc32(0, buf, SIZE));
	free(buf);
}

static void round_trip(void **state)
{
	(void)state;
	remove_dir();
	struct sl_gpt a, b;
	make_model(&a, 1);
	make_model(&b, 2);
	struct sl_checkpoint_state st = state_at(40);
	json_t *train = json_pack("{s:f}", "lr", 0.5);
	st.train = train;
	char path[4300];
	struct sl_err err = {0};
	assert_int_equal(sl_checkpoint_save(dir, &a, &st, 2, path, sizeof(path), &err), 0);
	json_decref(train);
	assert_non_null(strstr(path, "step-00000040.ckpt"));
	struct sl_checkpoint_state got = {0};
	assert_int_equal(sl_checkpoint_load(path, &b, &got, &err), 0);
	assert_int_equal(got.step, 40);
	assert_int_equal(got.data_epoch, 2);
	assert_int_equal(got.data_next, 17);
	assert_int_equal(got.data_seq, 6);
	assert_int_equal(got.data_tokens, 1000);
	assert_int_equal(got.seed, 99);
	assert_string_equal(got.data_path, "tokens.bin");
	assert_true(json_real_value(json_object_get(got.train, "lr")) == 0.5);
	json_decref(got.train);
	for (int i = 0; i < a.param_count; i++) {
		size_t bytes = (size_t)a.params[i]->numel * sizeof(float);
		assert_memory_equal(a.params[i]->value, b.params[i]->value, bytes);
		assert_memory_equal(a.params[i]->exp_avg, b.params[i]->exp_avg, bytes);
		assert_memory_equal(a.params[i]->exp_avg_sq, b.params[i]->exp_avg_sq, bytes);
	}
	sl_gpt_free(&a);
	sl_gpt_free(&b);
}

static void flip_byte(const char *path, long offset)
{
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	fseek(f, offset, SEEK_SET);
	int c = fgetc(f);
	fseek(f, offset, SEEK_SET);
	fputc(c ^ 0x40, f);
	fclose(f);
}

static void damaged_newest_falls_back(void **state)
{
	(void)state;
	remove_dir();
	struct sl_gpt a, b;
	make_model(&a, 1);
	make_model(&b, 2);
	struct sl_err err = {0};
	char p10[4300], p20[4300], p30[4300];
	struct sl_checkpoint_state st = state_at(10);
	assert_int_equal(sl_checkpoint_save(dir, &a, &st, 3, p10, sizeof(p10), &err), 0);
	st.step = 20;
	assert_int_equal(sl_checkpoint_save(dir, &a, &st, 3, p20, sizeof(p20), &err), 0);
	st.step = 30;
	assert_int_equal(sl_checkpoint_save(dir, &a, &st, 3, p30, sizeof(p30), &err), 0);

	struct stat sb;
	assert_int_equal(stat(p30, &sb), 0);
	flip_byte(p30, sb.st_size / 2);       /* corrupt the newest */
	assert_int_equal(truncate(p20, sb.st_size - 100), 0); /* truncate the one before */

	struct sl_checkpoint_state got = {0};
	assert_int_equal(sl_checkpoint_load(p30, &b, &got, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "checksum mismatch"));
	assert_non_null(strstr(err.msg, p30));
	assert_int_equal(sl_checkpoint_load(p20, &b, &got, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "truncated"));
	/* a failed load leaves the model untouched */
	assert_memory_not_equal(a.params[0]->value, b.params[0]->value,
				(size_t)a.params[0]->numel * sizeof(float));

	char loaded[4300];
	assert_int_equal(sl_checkpoint_load_latest(dir, &b, &got, loaded, sizeof(loaded), &err), 0);
	assert_string_equal(loaded, p10);
	assert_int_equal(got.step, 10);
	json_decref(got.train);
	assert_memory_equal(a.params[0]->value, b.params[0]->value,
			    (size_t)a.params[0]->numel * sizeof(float));
	/* the damaged files were set aside and no longer count */
	long long *steps;
	int count;
	assert_int_equal(sl_checkpoint_list(dir, &steps, &count, &err), 0);
	assert_int_equal(count, 1);
	assert_int_equal(steps[0], 10);
	free(steps);
	char aside[4400];
	snprintf(aside, sizeof(aside), "%s.damaged", p30);
	assert_int_equal(access(aside, F_OK), 0);

	/* all damaged: the error of the newest */
	flip_byte(p10, 30);
	assert_int_equal(sl_checkpoint_load_latest(dir, &b, &got, NULL, 0, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "step-00000010.ckpt"));
	/* none at all */
	assert_int_equal(sl_checkpoint_load_latest(dir, &b, &got, NULL, 0, &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "no checkpoint in"));
	sl_gpt_free(&a);
	sl_gpt_free(&b);
}

static void other_model_and_pruning(void **state)
{
	(void)state;
	remove_dir();
	struct sl_gpt a, other;
	make_model(&a, 1);
	struct sl_model_config m = tiny();
	m.hidden = 12;
	struct sl_err err = {0};
	assert_int_equal(sl_gpt_init(&other, &m, 0, 3, 1, 6, 1, 0, NULL, 1, &err), 0);
	for (long long s = 1; s <= 4; s++) {
		struct sl_checkpoint_state st = state_at(s * 5);
		assert_int_equal(sl_checkpoint_save(dir, &a, &st, 2, NULL, 0, &err), 0);
	}
	long long *steps;
	int count;
	assert_int_equal(sl_checkpoint_list(dir, &steps, &count, &err), 0);
	assert_int_equal(count, 2);
	assert_int_equal(steps[0], 20);
	assert_int_equal(steps[1], 15);
	free(steps);
	struct sl_checkpoint_state got = {0};
	assert_int_equal(sl_checkpoint_load_latest(dir, &other, &got, NULL, 0, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "model hidden is 8 there but 12"));
	/* nothing was set aside for that */
	assert_int_equal(sl_checkpoint_list(dir, &steps, &count, &err), 0);
	assert_int_equal(count, 2);
	free(steps);
	sl_gpt_free(&a);
	sl_gpt_free(&other);
}

static void safetensors_round_trip(void **state)
{
	(void)state;
	remove_dir();
	char path[300];
	snprintf(path, sizeof(path), "/tmp/sailor_test_st_%d.safetensors", (int)getpid());
	float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {-1, 0.5f, 7};
	struct sl_st_entry e[2] = {{"alpha", 2, {2, 3}, a}, {"beta.gamma", 1, {3}, b}};
	json_t *meta = json_pack("{s:s}", "format", "pt");
	struct sl_err err = {0};
	assert_int_equal(sl_safetensors_write(path, e, 2, meta, &err), 0);
	json_decref(meta);
	struct sl_safetensors st;
	assert_int_equal(sl_safetensors_open(&st, path, &err), 0);
	float got[6];
	long long shape_a[2] = {2, 3}, shape_b[1] = {3}, wrong[2] = {3, 2};
	assert_int_equal(sl_safetensors_read(&st, "alpha", 2, shape_a, got, &err), 0);
	assert_memory_equal(got, a, sizeof(a));
	assert_int_equal(sl_safetensors_read(&st, "beta.gamma", 1, shape_b, got, &err), 0);
	assert_memory_equal(got, b, sizeof(b));
	assert_int_equal(sl_safetensors_read(&st, "alpha", 2, wrong, got, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "has shape [2,3], the model needs [3,2]"));
	assert_int_equal(sl_safetensors_read(&st, "delta", 1, shape_b, got, &err), SL_ENOTFOUND);
	assert_true((st.data - (const unsigned char *)st.map) % 8 == 0);
	sl_safetensors_close(&st);
	assert_int_equal(truncate(path, 60), 0);
	assert_int_equal(sl_safetensors_open(&st, path, &err), SL_EINPUT);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc_known_value),
		cmocka_unit_test(crc_folded_equals_portable),
		cmocka_unit_test(round_trip),
		cmocka_unit_test(damaged_newest_falls_back),
		cmocka_unit_test(other_model_and_pruning),
		cmocka_unit_test(safetensors_round_trip),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
