/* The wire formats of the islands' outer exchange: fp32, bf16 and int8 in blocks of 256 with a
 * scale each. The formats, their byte layout and their error bounds are in outer_wire.h; this
 * file keeps to them with plain fp32 arithmetic (no double, no fused multiply-add), so that the
 * bytes and the decoded values are the same on every host and in the PyTorch reference.
 *
 * Invariants: the encoder never writes a non-finite value's bytes (it stops at the first one);
 * every int8 scale s has 127 s finite, so every decoded value is finite; decode_add decodes
 * through sl_outer_wire_decode, so both give the same bits.
 */
#include "runtime/outer_wire.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define BLOCK SL_OUTER_WIRE_INT8_BLOCK
#define INT8_BLOCK_BYTES (4 + BLOCK)
/* From here on a finite value rounds to infinity in bf16: BF16_MAX plus half its ulp (2^119),
 * the tie going up because BF16_MAX's last bit is odd. */
#define BF16_CLAMP_FROM 0x1.ffp127f

static const char *const format_names[] = {"fp32", "bf16", "int8"};
#define FORMAT_COUNT ((int)(sizeof(format_names) / sizeof(format_names[0])))

static int format_known(enum sl_outer_wire_format f)
{
	return (int)f >= 0 && (int)f < FORMAT_COUNT;
}

int sl_outer_wire_parse(const char *name, enum sl_outer_wire_format *out, struct sl_err *err)
{
	for (int i = 0; name && i < FORMAT_COUNT; i++)
		if (strcmp(name, format_names[i]) == 0) {
			*out = (enum sl_outer_wire_format)i;
			return 0;
		}
	return sl_err_set(err, SL_EINPUT, "wire format '%s': unknown (fp32, bf16, int8)",
			  name ? name : "");
}

const char *sl_outer_wire_name(enum sl_outer_wire_format f)
{
	return format_known(f) ? format_names[f] : "unknown";
}

long long sl_outer_wire_bytes(enum sl_outer_wire_format f, long long count)
{
	if (count < 0 || !format_known(f))
		return SL_EINPUT;
	switch (f) {
	case SL_OUTER_WIRE_FP32:
		return 4 * count;
	case SL_OUTER_WIRE_BF16:
		return 2 * count;
	case SL_OUTER_WIRE_INT8:
		break;
	}
	return count + 4 * ((count + BLOCK - 1) / BLOCK);
}

/* Bytes in little-endian order, written out so that the layout does not depend on the host. */
static uint32_t float_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof(u));
	return u;
}

static float bits_float(uint32_t u)
{
	float x;
	memcpy(&x, &u, sizeof(x));
	return x;
}

static void put_u32(unsigned char *p, uint32_t u)
{
	p[0] = (unsigned char)u;
	p[1] = (unsigned char)(u >> 8);
	p[2] = (unsigned char)(u >> 16);
	p[3] = (unsigned char)(u >> 24);
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int refuse(const float *in, long long i, long long count, long long *bad_index,
		  struct sl_err *err)
{
	if (bad_index)
		*bad_index = i;
	return sl_err_set(err, SL_EINPUT, "value %lld of %lld is not finite (%s)", i, count,
			  isnan(in[i]) ? "nan" : in[i] > 0 ? "inf" : "-inf");
}

/* Round to nearest even on the 16 bits dropped; adding 0x7fff plus the kept last bit carries
 * into the kept bits exactly when the dropped ones are above half, or at half with an odd last
 * bit. A finite x that carries into the all-ones exponent is clamped (outer_wire.h). */
static uint16_t bf16_round(float x)
{
	uint32_t u = float_bits(x);
	uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
	if ((r & 0x7fffu) == 0x7f80u)
		r = (r & 0x8000u) | 0x7f7fu;
	return (uint16_t)r;
}

/* s = m / 127, stepped towards 0 where 127 s would overflow (m = FLT_MAX only). */
static float int8_scale(float m)
{
	float s = m / 127.0f;
	if (!isfinite(127.0f * s))
		s = nextafterf(s, 0.0f);
	return s;
}

/* q of x for a scale s > 0, as the byte it is sent as. Clamping before rounding gives the q of
 * rounding first (rounding is monotone, ±127 are integers). rintf rather than nearbyintf or
 * lrintf: the same value in the default rounding mode, and GCC inlines it where the other two
 * are library calls, once per value of the model. */
static unsigned char int8_q(float x, float s)
{
	float t = x / s;
	t = t < -127.0f ? -127.0f : t > 127.0f ? 127.0f : t;
	return (unsigned char)(int)rintf(t);
}

static float int8_value(unsigned char b, float s)
{
	int q = (int)b - (b & 0x80 ? 256 : 0);
	return (float)q * s;
}

/* The max|x| of in[0 .. len); -1 and *bad = the first non-finite index if there is one. */
static float block_max(const float *in, int len, int *bad)
{
	float m = 0.0f;
	for (int i = 0; i < len; i++) {
		float a = fabsf(in[i]);
		if (!(a <= FLT_MAX)) {
			*bad = i;
			return -1.0f;
		}
		m = a > m ? a : m;
	}
	return m;
}

static int block_len(long long start, long long count)
{
	return count - start < BLOCK ? (int)(count - start) : BLOCK;
}

static int encode_int8(const float *in, long long count, unsigned char *out,
		       long long *bad_index, struct sl_err *err)
{
	for (long long b0 = 0; b0 < count; b0 += BLOCK) {
		int len = block_len(b0, count), bad = 0;
		float m = block_max(in + b0, len, &bad);
		if (m < 0)
			return refuse(in, b0 + bad, count, bad_index, err);
		float s = int8_scale(m);
		unsigned char *p = out + b0 / BLOCK * INT8_BLOCK_BYTES;
		put_u32(p, float_bits(s));
		for (int i = 0; i < len; i++)
			p[4 + i] = s > 0.0f ? int8_q(in[b0 + i], s) : 0;
	}
	return 0;
}

int sl_outer_wire_encode(enum sl_outer_wire_format f, const float *in, long long count,
			 unsigned char *out, long long *bad_index, struct sl_err *err)
{
	if (count < 0 || !format_known(f))
		return sl_err_set(err, SL_EINPUT, "wire encode: %s %lld",
				  count < 0 ? "negative count" : "unknown format",
				  count < 0 ? count : (long long)f);
	switch (f) {
	case SL_OUTER_WIRE_FP32:
		for (long long i = 0; i < count; i++) {
			if (!isfinite(in[i]))
				return refuse(in, i, count, bad_index, err);
			put_u32(out + 4 * i, float_bits(in[i]));
		}
		return 0;
	case SL_OUTER_WIRE_BF16:
		for (long long i = 0; i < count; i++) {
			if (!isfinite(in[i]))
				return refuse(in, i, count, bad_index, err);
			uint16_t h = bf16_round(in[i]);
			out[2 * i] = (unsigned char)h;
			out[2 * i + 1] = (unsigned char)(h >> 8);
		}
		return 0;
	case SL_OUTER_WIRE_INT8:
		break;
	}
	return encode_int8(in, count, out, bad_index, err);
}

void sl_outer_wire_decode(enum sl_outer_wire_format f, const unsigned char *in, long long count,
			  float *out)
{
	switch (f) {
	case SL_OUTER_WIRE_FP32:
		for (long long i = 0; i < count; i++)
			out[i] = bits_float(get_u32(in + 4 * i));
		return;
	case SL_OUTER_WIRE_BF16:
		for (long long i = 0; i < count; i++)
			out[i] = bits_float((uint32_t)in[2 * i] << 16 | (uint32_t)in[2 * i + 1] << 24);
		return;
	case SL_OUTER_WIRE_INT8:
		for (long long b0 = 0; b0 < count; b0 += BLOCK) {
			const unsigned char *p = in + b0 / BLOCK * INT8_BLOCK_BYTES;
			float s = bits_float(get_u32(p));
			int len = block_len(b0, count);
			for (int i = 0; i < len; i++)
				out[b0 + i] = int8_value(p[4 + i], s);
		}
		return;
	}
}

/* Block by block: values i0 .. i0+255 start at byte sl_outer_wire_bytes(f, i0) in every format,
 * i0 being a multiple of 256. The product and the sum are two statements so that they are never
 * fused into one rounding: ISO C lets a compiler contract inside one expression (clang does by
 * default), and GCC contracts across statements only outside ISO mode (the Makefile's -std=c11
 * turns it off). */
void sl_outer_wire_decode_add(enum sl_outer_wire_format f, const unsigned char *in,
			      long long count, float weight, float *acc)
{
	if (!format_known(f))
		return;
	float v[BLOCK];
	for (long long i0 = 0; i0 < count; i0 += BLOCK) {
		int len = block_len(i0, count);
		sl_outer_wire_decode(f, in + sl_outer_wire_bytes(f, i0), len, v);
		for (int i = 0; i < len; i++) {
			float p = weight * v[i];
			acc[i0 + i] = acc[i0 + i] + p;
		}
	}
}

/* Half a bf16 ulp of x's binade (2^(E - 135) for the biased exponent E, 2^-134 below 2^-126),
 * or the clamp's own error. */
static float bf16_bound(float x)
{
	float a = fabsf(x);
	if (!(a <= FLT_MAX))
		return INFINITY;
	if (a == 0.0f)
		return 0.0f;
	if (a >= BF16_CLAMP_FROM)
		return a - SL_OUTER_WIRE_BF16_MAX; /* exact: both in [2^127, 2^128) */
	int e = (int)(float_bits(a) >> 23);
	return ldexpf(1.0f, (e > 0 ? e : 1) - 135);
}

void sl_outer_wire_error_bound(enum sl_outer_wire_format f, const float *in, long long count,
			       float *bound)
{
	switch (f) {
	case SL_OUTER_WIRE_FP32:
		for (long long i = 0; i < count; i++)
			bound[i] = isfinite(in[i]) ? 0.0f : INFINITY;
		return;
	case SL_OUTER_WIRE_BF16:
		for (long long i = 0; i < count; i++)
			bound[i] = bf16_bound(in[i]);
		return;
	case SL_OUTER_WIRE_INT8:
		for (long long b0 = 0; b0 < count; b0 += BLOCK) {
			int len = block_len(b0, count), bad = 0;
			float m = block_max(in + b0, len, &bad), b = INFINITY;
			if (m >= 0)
				b = int8_scale(m) * 0.5f + m * 0x1p-22f + 0x1p-142f;
			for (int i = 0; i < len; i++)
				bound[b0 + i] = b;
		}
		return;
	}
}
