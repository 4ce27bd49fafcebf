/* Unit tests for the outer exchange's wire formats (runtime/outer_wire.h): every decoded value
 * lies within the bound the module states, and the bounds are themselves held to the
 * specification (docs/design/islands.md, "The wire") so that a loose bound cannot hide a bad
 * encoder; the bytes are checked against the documented layout and against reference encoders
 * written here independently (bf16 by picking the nearer neighbour, int8 with nearbyintf);
 * non-finite values are refused at the right index; decode_add accumulates in fp32; and the
 * average of three contributions stays within the sum of their weighted bounds. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/outer_wire.h"

static const enum sl_outer_wire_format formats[] = {SL_OUTER_WIRE_FP32, SL_OUTER_WIRE_BF16,
						     SL_OUTER_WIRE_INT8};
static const long long counts[] = {0, 1, 255, 256, 257, 1000};
#define N_FORMATS 3
#define N_COUNTS 6
#define CANARY 0xa5
#define SLACK 16 /* canary bytes after every encoded buffer */

static uint64_t rng_state = 0x5eed1234abcdULL;

static uint64_t next_u64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [-1, 1) times 2^e, e uniform in [emin, emax]. */
static float random_value(int emin, int emax)
{
	double u = (double)(next_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0;
	int e = emin + (int)(next_u64() % (uint64_t)(emax - emin + 1));
	return (float)ldexp(u, e);
}

static void fill_random(float *x, long long n, int emin, int emax)
{
	for (long long i = 0; i < n; i++)
		x[i] = random_value(emin, emax);
}

static uint32_t bits_of(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof(u));
	return u;
}

static float float_of(uint32_t u)
{
	float x;
	memcpy(&x, &u, sizeof(x));
	return x;
}

/* Encoded bytes of in[0 .. n) in a buffer with a canary tail that the encoder must not touch. */
static unsigned char *encode_ok(enum sl_outer_wire_format f, const float *in, long long n)
{
	long long bytes = sl_outer_wire_bytes(f, n);
	assert_true(bytes >= 0);
	unsigned char *buf = malloc((size_t)bytes + SLACK);
	assert_non_null(buf);
	memset(buf, CANARY, (size_t)bytes + SLACK);
	long long bad = -7;
	struct sl_err err = {0};
	assert_int_equal(sl_outer_wire_encode(f, in, n, buf, &bad, &err), 0);
	assert_int_equal(bad, -7);
	for (int i = 0; i < SLACK; i++)
		assert_int_equal(buf[bytes + i], CANARY);
	return buf;
}

/* The module's bound for in[0 .. n) held to the specification, independently of the module:
 * fp32 0; bf16 at most 2^-8 |x| (normal x) or 2^-134 (subnormal); int8 at most
 * m/254 (1 + 2^-12) + 2^-142 (and a little for subnormal roundings), m the block's max|x|. */
static void check_bound_against_spec(enum sl_outer_wire_format f, const float *in, long long n,
				     const float *bound)
{
	for (long long i = 0; i < n; i++) {
		double a = fabs((double)in[i]), limit = 0;
		if (f == SL_OUTER_WIRE_BF16) {
			limit = a >= 0x1p-126 ? a * 0x1p-8 : 0x1p-134;
		} else if (f == SL_OUTER_WIRE_INT8) {
			long long b0 = i / SL_OUTER_WIRE_INT8_BLOCK * SL_OUTER_WIRE_INT8_BLOCK;
			double m = 0;
			for (long long j = b0; j < n && j < b0 + SL_OUTER_WIRE_INT8_BLOCK; j++)
				m = fmax(m, fabs((double)in[j]));
			/* + 2^-148: a subnormal m / 127 rounds by up to 2^-150, and the
			 * bound's own fp32 sum by a few 2^-149 there */
			limit = m / 254 * (1 + 0x1p-12) + 0x1p-142 + 0x1p-148;
		}
		if (!(bound[i] >= 0 && (double)bound[i] <= limit))
			fail_msg("%s value %lld: %a has bound %a, the spec's %a",
				 sl_outer_wire_name(f), i, (double)in[i], (double)bound[i], limit);
	}
}

/* Encode, decode, and every value within the module's bound, the bound within the spec's;
 * decode_add onto zeros with weight 1 gives the decoded values. Returns the decoded values
 * (caller frees). */
static float *round_trip(enum sl_outer_wire_format f, const float *in, long long n)
{
	unsigned char *buf = encode_ok(f, in, n);
	float *dec = malloc(sizeof(float) * (size_t)(n + 1));
	float *bound = malloc(sizeof(float) * (size_t)(n + 1));
	float *acc = calloc((size_t)(n + 1), sizeof(float));
	assert_true(dec && bound && acc);
	sl_outer_wire_decode(f, buf, n, dec);
	sl_outer_wire_error_bound(f, in, n, bound);
	check_bound_against_spec(f, in, n, bound);
	sl_outer_wire_decode_add(f, buf, n, 1.0f, acc);
	for (long long i = 0; i < n; i++) {
		assert_true(isfinite(dec[i]));
		if (!(fabs((double)dec[i] - (double)in[i]) <= (double)bound[i]))
			fail_msg("%s value %lld: %a decodes to %a, bound %a", sl_outer_wire_name(f),
				 i, (double)in[i], (double)dec[i], (double)bound[i]);
		assert_true(acc[i] == dec[i]);
	}
	free(buf);
	free(bound);
	free(acc);
	return dec;
}

static void parse_and_name(void **state)
{
	(void)state;
	for (int i = 0; i < N_FORMATS; i++) {
		enum sl_outer_wire_format f = SL_OUTER_WIRE_INT8;
		const char *name = sl_outer_wire_name(formats[i]);
		assert_int_equal(sl_outer_wire_parse(name, &f, NULL), 0);
		assert_int_equal(f, formats[i]);
	}
	assert_string_equal(sl_outer_wire_name(SL_OUTER_WIRE_BF16), "bf16");
	assert_string_equal(sl_outer_wire_name((enum sl_outer_wire_format)7), "unknown");
	const char *bad[] = {"fp16", "", "FP32", "int8 ", "int4"};
	for (int i = 0; i < 5; i++) {
		struct sl_err err = {0};
		enum sl_outer_wire_format f = SL_OUTER_WIRE_BF16;
		assert_int_equal(sl_outer_wire_parse(bad[i], &f, &err), SL_EINPUT);
		assert_int_equal(f, SL_OUTER_WIRE_BF16);
		assert_non_null(strstr(err.msg, "unknown"));
	}
	struct sl_err err = {0};
	enum sl_outer_wire_format f;
	assert_int_equal(sl_outer_wire_parse(NULL, &f, &err), SL_EINPUT);
}

static void byte_counts(void **state)
{
	(void)state;
	const long long int8_bytes[N_COUNTS] = {0, 5, 259, 260, 265, 1016};
	for (int i = 0; i < N_COUNTS; i++) {
		assert_int_equal(sl_outer_wire_bytes(SL_OUTER_WIRE_FP32, counts[i]), 4 * counts[i]);
		assert_int_equal(sl_outer_wire_bytes(SL_OUTER_WIRE_BF16, counts[i]), 2 * counts[i]);
		assert_int_equal(sl_outer_wire_bytes(SL_OUTER_WIRE_INT8, counts[i]), int8_bytes[i]);
	}
	assert_int_equal(sl_outer_wire_bytes(SL_OUTER_WIRE_INT8, 512), 520);
	assert_int_equal(sl_outer_wire_bytes(SL_OUTER_WIRE_FP32, -1), SL_EINPUT);
	assert_int_equal(sl_outer_wire_bytes((enum sl_outer_wire_format)3, 1), SL_EINPUT);
	float x = 1.0f;
	unsigned char out[8];
	assert_int_equal(sl_outer_wire_encode((enum sl_outer_wire_format)3, &x, 1, out, NULL, NULL),
			 SL_EINPUT);
	assert_int_equal(sl_outer_wire_encode(SL_OUTER_WIRE_FP32, &x, -1, out, NULL, NULL),
			 SL_EINPUT);
}

/* Random data of mixed magnitudes and signs, every format, every count. */
static void random_round_trips(void **state)
{
	(void)state;
	float x[1000];
	for (int f = 0; f < N_FORMATS; f++)
		for (int c = 0; c < N_COUNTS; c++)
			for (int rep = 0; rep < 4; rep++) {
				/* rep 0: one scale; 1: wide; 2: tiny; 3: huge */
				const int lo[] = {-3, -40, -140, 100}, hi[] = {0, 40, -120, 127};
				fill_random(x, counts[c], lo[rep], hi[rep]);
				free(round_trip(formats[f], x, counts[c]));
			}
}

static void fp32_is_exact(void **state)
{
	(void)state;
	float x[300];
	fill_random(x, 300, -149, 127);
	x[0] = -0.0f, x[1] = FLT_MAX, x[2] = -FLT_MIN, x[3] = 0x1p-149f, x[4] = 1.0f;
	unsigned char *buf = encode_ok(SL_OUTER_WIRE_FP32, x, 300);
	/* little-endian binary32: 1.0f = 0x3f800000 */
	const unsigned char one[4] = {0x00, 0x00, 0x80, 0x3f};
	assert_memory_equal(buf + 16, one, 4);
	float *dec = round_trip(SL_OUTER_WIRE_FP32, x, 300);
	for (int i = 0; i < 300; i++)
		assert_int_equal(bits_of(dec[i]), bits_of(x[i]));
	free(dec);
	free(buf);
}

/* bf16 by the definition: the nearer of the two bf16 values around x, the even one on a tie,
 * then the clamp. */
static uint16_t bf16_reference(float x)
{
	uint32_t u = bits_of(x);
	uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
	double dlo = fabs((double)float_of((uint32_t)lo << 16) - x);
	double dhi = fabs((double)float_of((uint32_t)hi << 16) - x);
	if ((u & 0xffffu) == 0)
		return lo;
	uint16_t r = dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1) ? hi : lo;
	if ((r & 0x7fffu) == 0x7f80u) /* rounded onto infinity */
		r = (uint16_t)((r & 0x8000u) | 0x7f7fu);
	return r;
}

static void bf16_rounding(void **state)
{
	(void)state;
	/* ties to even (down, then up), above half, layout, the clamp */
	const float x[] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f,
			   -2.0f, FLT_MAX, -FLT_MAX, 0x1.ffp127f, 0x1.fefffep127f,
			   SL_OUTER_WIRE_BF16_MAX, 0x1p-149f, -0x1p-134f, 0x1.8p-133f};
	const float want[] = {1.0f, 1.0f + 0x1p-6f, 1.0f + 0x1p-7f, -2.0f,
			      SL_OUTER_WIRE_BF16_MAX, -SL_OUTER_WIRE_BF16_MAX,
			      SL_OUTER_WIRE_BF16_MAX, SL_OUTER_WIRE_BF16_MAX,
			      SL_OUTER_WIRE_BF16_MAX, 0.0f, -0.0f, 0x1p-132f};
	const int n = (int)(sizeof(x) / sizeof(x[0]));
	unsigned char *buf = encode_ok(SL_OUTER_WIRE_BF16, x, n);
	assert_int_equal(buf[6], 0x00); /* -2 = 0xc000, little-endian */
	assert_int_equal(buf[7], 0xc0);
	float *dec = round_trip(SL_OUTER_WIRE_BF16, x, n);
	for (int i = 0; i < n; i++)
		if (bits_of(dec[i]) != bits_of(want[i]))
			fail_msg("bf16 of %a: %a, want %a", (double)x[i], (double)dec[i],
				 (double)want[i]);
	/* the bound is tight: 1 + 2^-8 is off by 2^-8, more than islands.md's old 2^-9 |x| */
	float b;
	sl_outer_wire_error_bound(SL_OUTER_WIRE_BF16, x, 1, &b);
	assert_true(b == 0x1p-8f && (double)x[0] - dec[0] == 0x1p-8);
	assert_true(0x1p-8 > 0x1p-9 * x[0]);
	free(dec);
	free(buf);
	/* against the reference on random bit patterns of every finite value */
	float r[4096];
	for (int i = 0; i < 4096; i++)
		do
			r[i] = float_of((uint32_t)next_u64());
		while (!isfinite(r[i]));
	buf = encode_ok(SL_OUTER_WIRE_BF16, r, 4096);
	for (int i = 0; i < 4096; i++) {
		uint16_t got = (uint16_t)(buf[2 * i] | buf[2 * i + 1] << 8);
		if (got != bf16_reference(r[i]))
			fail_msg("bf16 of %a: %04x, want %04x", (double)r[i], got,
				 bf16_reference(r[i]));
	}
	free(buf);
	free(round_trip(SL_OUTER_WIRE_BF16, r, 4096));
}

/* int8 by the definition, with nearbyintf; the FLT_MAX step of the scale is not here. */
static void int8_reference(const float *x, int n, unsigned char *out)
{
	float m = 0;
	for (int i = 0; i < n; i++)
		m = fmaxf(m, fabsf(x[i]));
	float s = m / 127.0f;
	uint32_t sb = bits_of(s);
	for (int i = 0; i < 4; i++)
		out[i] = (unsigned char)(sb >> (8 * i));
	for (int i = 0; i < n; i++) {
		float q = s > 0 ? fminf(fmaxf(nearbyintf(x[i] / s), -127.0f), 127.0f) : 0.0f;
		out[4 + i] = (unsigned char)(int8_t)q;
	}
}

static void int8_layout(void **state)
{
	(void)state;
	/* scale 1: q = x rounded half to even */
	float x[600] = {127.0f, -127.0f, 63.5f, 62.5f, -62.5f, 0.49f, -0.5f, 1.5f};
	unsigned char *buf = encode_ok(SL_OUTER_WIRE_INT8, x, 8);
	const unsigned char want[12] = {0x00, 0x00, 0x80, 0x3f, 0x7f, 0x81, 64, 62,
					(unsigned char)-62, 0, 0, 2};
	assert_memory_equal(buf, want, 12);
	free(buf);
	/* blocks at 260 b, against the reference; chunks at multiples of 256 encode alike */
	fill_random(x, 600, -10, 10);
	buf = encode_ok(SL_OUTER_WIRE_INT8, x, 600);
	unsigned char ref[260];
	for (int b = 0; b < 3; b++) {
		int len = b < 2 ? 256 : 88;
		int8_reference(x + 256 * b, len, ref);
		assert_memory_equal(buf + 260 * b, ref, (size_t)(4 + len));
	}
	unsigned char *tail = encode_ok(SL_OUTER_WIRE_INT8, x + 256, 344);
	assert_memory_equal(tail, buf + 260, (size_t)sl_outer_wire_bytes(SL_OUTER_WIRE_INT8, 344));
	free(tail);
	free(buf);
}

/* A block of zeros (and one of -0) has scale 0 and decodes to zeros; its neighbours do not
 * suffer. */
static void int8_zero_block(void **state)
{
	(void)state;
	float x[700];
	fill_random(x, 700, -5, 5);
	for (int i = 256; i < 512; i++)
		x[i] = i % 2 ? -0.0f : 0.0f;
	unsigned char *buf = encode_ok(SL_OUTER_WIRE_INT8, x, 700);
	assert_int_equal(buf[260] | buf[261] | buf[262] | buf[263], 0);
	float *dec = round_trip(SL_OUTER_WIRE_INT8, x, 700);
	for (int i = 256; i < 512; i++)
		assert_true(dec[i] == 0.0f);
	float bound[700];
	sl_outer_wire_error_bound(SL_OUTER_WIRE_INT8, x, 700, bound);
	assert_true(bound[300] <= 0x1p-142f);
	free(dec);
	free(buf);
}

/* FLT_MAX among tiny values: the tiny ones decode to 0, FLT_MAX to a finite value near it. */
static void int8_huge_among_tiny(void **state)
{
	(void)state;
	for (int sign = -1; sign <= 1; sign += 2) {
		float x[300];
		fill_random(x, 300, -130, -1);
		x[3] = 0x1p-149f, x[4] = -1e-30f, x[5] = 1e30f, x[6] = 0.0f;
		x[17] = (float)sign * FLT_MAX;
		for (int i = 256; i < 300; i++)
			x[i] = (float)(i - 255) / 44.0f;
		float *dec = round_trip(SL_OUTER_WIRE_INT8, x, 300);
		for (int i = 0; i < 256; i++)
			if (i != 17)
				assert_true(dec[i] == 0.0f);
		assert_true(isfinite(dec[17]) && dec[17] * (float)sign > 0x1.fffp127f);
		for (int i = 256; i < 300; i++) /* the next block has its own scale */
			assert_true(dec[i] != 0);
		free(dec);
	}
}

/* Subnormals and the smallest normals: in every format, and int8 blocks whose max sweeps the
 * range where m / 127 is subnormal or underflows to 0. */
static void subnormals(void **state)
{
	(void)state;
	float x[512];
	for (int i = 0; i < 512; i++)
		x[i] = float_of((uint32_t)(next_u64() % 0x00900000u)) * (i % 3 ? 1.0f : -1.0f);
	for (int f = 0; f < N_FORMATS; f++)
		free(round_trip(formats[f], x, 512));
	float blk[256];
	unsigned char *buf;
	for (uint32_t k = 1; k < 0x40000000u; k += 1 + k / 64) {
		float m = float_of(k); /* k * 2^-149 */
		for (int i = 0; i < 256; i++)
			blk[i] = float_of((uint32_t)(next_u64() % (k + 1))) * (i % 2 ? -1.0f : 1.0f);
		blk[next_u64() % 256] = k % 2 ? -m : m; /* a negative max clamps at -127 */
		unsigned char ref[260];
		buf = encode_ok(SL_OUTER_WIRE_INT8, blk, 256);
		int8_reference(blk, 256, ref);
		assert_memory_equal(buf, ref, sizeof(ref));
		free(buf);
		free(round_trip(SL_OUTER_WIRE_INT8, blk, 256));
	}
	/* m = 63 * 2^-149 (below 127 * 2^-150) underflows to scale 0, 64 * 2^-149 does not */
	blk[0] = float_of(63);
	buf = encode_ok(SL_OUTER_WIRE_INT8, blk, 1);
	assert_int_equal(buf[0] | buf[1] | buf[2] | buf[3] | buf[4], 0);
	free(buf);
	blk[0] = float_of(64);
	buf = encode_ok(SL_OUTER_WIRE_INT8, blk, 1);
	assert_int_equal(buf[0], 1); /* s = 2^-149, q = 64 */
	assert_int_equal(buf[4], 64);
	free(buf);
}

/* Values next to half-way points (k + 1/2) s: the fp32 roundings of x / s and q * s take some
 * of them past s / 2, by up to about 2^-24 m; that is why the bound carries 2^-22 m. */
static void int8_half_way(void **state)
{
	(void)state;
	const float maxes[] = {1.0f, 3.0f, 0.1f, 1e-3f, 12345.678f, 0.7f};
	float x[257];
	int over = 0;
	for (int mi = 0; mi < 6; mi++) {
		float s = maxes[mi] / 127.0f;
		for (int d = -40; d <= 40; d += 5) {
			x[0] = maxes[mi];
			for (int k = -127; k < 127; k++) {
				float v = ((float)k + 0.5f) * s;
				for (int j = 0; j < abs(d); j++)
					v = nextafterf(v, d > 0 ? INFINITY : -INFINITY);
				x[k + 128] = fabsf(v) <= maxes[mi] ? v : 0.0f;
			}
			float *dec = round_trip(SL_OUTER_WIRE_INT8, x, 255);
			for (int i = 1; i < 255; i++)
				over += fabs((double)dec[i] - (double)x[i]) > (double)s / 2;
			free(dec);
		}
	}
	assert_true(over > 0);
}

static void expect_refused(enum sl_outer_wire_format f, const float *x, long long n,
			   long long want_index)
{
	long long bytes = sl_outer_wire_bytes(f, n);
	unsigned char *buf = malloc((size_t)bytes + 1);
	assert_non_null(buf);
	long long bad = -1;
	struct sl_err err = {0};
	assert_int_equal(sl_outer_wire_encode(f, x, n, buf, &bad, &err), SL_EINPUT);
	assert_int_equal(bad, want_index);
	assert_non_null(strstr(err.msg, "not finite"));
	assert_int_equal(sl_outer_wire_encode(f, x, n, buf, NULL, NULL), SL_EINPUT);
	float *bound = malloc(sizeof(float) * (size_t)n);
	assert_non_null(bound);
	sl_outer_wire_error_bound(f, x, n, bound);
	assert_true(isinf(bound[want_index]));
	free(bound);
	free(buf);
}

static void non_finite_refused(void **state)
{
	(void)state;
	float x[1000];
	for (int f = 0; f < N_FORMATS; f++) {
		const float bad[] = {NAN, -NAN, INFINITY, -INFINITY};
		const long long at[] = {0, 255, 256, 257, 999};
		for (int b = 0; b < 4; b++)
			for (int a = 0; a < 5; a++) {
				fill_random(x, 1000, -3, 3);
				x[at[a]] = bad[b];
				if (at[a] < 900) /* a later one must not be the one reported */
					x[900 + a] = bad[(b + 1) % 4];
				expect_refused(formats[f], x, 1000, at[a]);
			}
		/* inside a block, after finite values of that block */
		fill_random(x, 1000, -3, 3);
		x[300] = INFINITY, x[301] = NAN;
		expect_refused(formats[f], x, 1000, 300);
		expect_refused(formats[f], x + 300, 1, 0);
	}
	struct sl_err err = {0};
	unsigned char buf[8];
	float one = NAN;
	sl_outer_wire_encode(SL_OUTER_WIRE_FP32, &one, 1, buf, NULL, &err);
	assert_string_equal(err.msg, "value 0 of 1 is not finite (nan)");
}

/* acc = acc + w * decoded, bit for bit, for several weights, and the canary after acc. */
static void decode_add_weights(void **state)
{
	(void)state;
	float x[1000], acc[1001], want[1000], dec[1000];
	const float weights[] = {0.3f, 1.0f, -0.75f, 0.0f, 1e-20f, 3.5f};
	for (int f = 0; f < N_FORMATS; f++)
		for (int w = 0; w < 6; w++) {
			fill_random(x, 1000, -8, 8);
			unsigned char *buf = encode_ok(formats[f], x, 1000);
			sl_outer_wire_decode(formats[f], buf, 1000, dec);
			fill_random(acc, 1000, -8, 8);
			acc[1000] = 42.0f;
			for (int i = 0; i < 1000; i++) {
				float p = weights[w] * dec[i];
				want[i] = acc[i] + p;
			}
			sl_outer_wire_decode_add(formats[f], buf, 1000, weights[w], acc);
			for (int i = 0; i < 1000; i++)
				assert_int_equal(bits_of(acc[i]), bits_of(want[i]));
			assert_true(acc[1000] == 42.0f);
			if (formats[f] == SL_OUTER_WIRE_FP32 && weights[w] == 0.3f)
				assert_true(acc[5] == want[5] && dec[5] == x[5]);
			free(buf);
		}
}

/* One outer step's average of three islands (docs/design/islands.md, "The outer step"):
 * Σ w_i dec(enc(Δ_i)) in island order lies within Σ w_i bound_i of the fp32 average Σ w_i Δ_i,
 * per value, plus the fp32 roundings of the two accumulations (3 products and 2 sums each, at
 * most 2^-24 of a partial sum below Σ|w_i|(|Δ_i| + bound_i) each, taken as 8 such units, and
 * 2^-140 for products that underflow); the average encoded once more for the return trip adds
 * its own bound. For fp32 the two averages are the same bits. */
static void average_of_three(void **state)
{
	(void)state;
	enum { N = 1000 };
	static float d[3][N], bound[3][N], avg[N], ref[N], back[N], back_bound[N];
	const float tokens[3] = {3000.0f, 1000.0f, 2000.0f};
	const int lo[3] = {-12, -4, -30}, hi[3] = {-2, 0, 3};
	float w[3];
	for (int i = 0; i < 3; i++)
		w[i] = tokens[i] / (tokens[0] + tokens[1] + tokens[2]);
	for (int f = 0; f < N_FORMATS; f++) {
		memset(avg, 0, sizeof(avg));
		memset(ref, 0, sizeof(ref));
		for (int i = 0; i < 3; i++) {
			fill_random(d[i], N, lo[i], hi[i]);
			d[i][7] = 0.0f, d[i][300] = FLT_MIN / 3;
			unsigned char *buf = encode_ok(formats[f], d[i], N);
			sl_outer_wire_decode_add(formats[f], buf, N, w[i], avg);
			sl_outer_wire_error_bound(formats[f], d[i], N, bound[i]);
			for (int k = 0; k < N; k++) {
				float p = w[i] * d[i][k];
				ref[k] = ref[k] + p;
			}
			free(buf);
		}
		unsigned char *buf = encode_ok(formats[f], avg, N);
		sl_outer_wire_decode(formats[f], buf, N, back);
		sl_outer_wire_error_bound(formats[f], avg, N, back_bound);
		free(buf);
		for (int k = 0; k < N; k++) {
			double sum_bound = 0, size = 0;
			for (int i = 0; i < 3; i++) {
				sum_bound += (double)w[i] * bound[i][k];
				size += fabs((double)w[i]) * (fabs((double)d[i][k]) + bound[i][k]);
			}
			double slack = 8 * 0x1p-24 * size + 0x1p-140;
			double err = fabs((double)avg[k] - (double)ref[k]);
			if (!(err <= sum_bound + slack))
				fail_msg("%s value %d: average off by %a, bound %a",
					 sl_outer_wire_name(formats[f]), k, err, sum_bound + slack);
			err = fabs((double)back[k] - (double)ref[k]);
			assert_true(err <= sum_bound + back_bound[k] + slack);
			if (formats[f] == SL_OUTER_WIRE_FP32)
				assert_true(bits_of(avg[k]) == bits_of(ref[k]) && back[k] == avg[k]);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_and_name),
		cmocka_unit_test(byte_counts),
		cmocka_unit_test(random_round_trips),
		cmocka_unit_test(fp32_is_exact),
		cmocka_unit_test(bf16_rounding),
		cmocka_unit_test(int8_layout),
		cmocka_unit_test(int8_zero_block),
		cmocka_unit_test(int8_huge_among_tiny),
		cmocka_unit_test(int8_half_way),
		cmocka_unit_test(subnormals),
		cmocka_unit_test(non_finite_refused),
		cmocka_unit_test(decode_add_weights),
		cmocka_unit_test(average_of_three),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
