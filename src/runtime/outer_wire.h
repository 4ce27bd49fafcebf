/* The wire formats of the islands' outer exchange (docs/design/islands.md, "The wire"): how a
 * piece of pseudo-gradient Δ, or of the average Δ̄, is turned into bytes and back. Pure: no MPI,
 * no allocation, no state; the exchange (who sends which bytes to whom) lives elsewhere.
 *
 * Formats, per value x (every x finite: encoding refuses NaN and ±inf, see below):
 *   fp32  the 4 bytes of x; exact.
 *   bf16  the upper 16 bits of x rounded to nearest, ties to even; a finite x that would round
 *         to infinity (|x| >= SL_OUTER_WIRE_BF16_MAX + 2^119) is clamped to
 *         ±SL_OUTER_WIRE_BF16_MAX.
 *   int8  blocks of SL_OUTER_WIRE_INT8_BLOCK values (the last one possibly shorter), each with
 *         an fp32 scale s = m / 127 (m the block's max|x|, fp32 division) and per value
 *         q = round-half-even(x / s) (fp32 division) clamped to -127..127, decoded as
 *         (float)q * s. A block whose s is 0 (all zeros, or m <= 127 * 2^-150, where m / 127
 *         underflows) has every q = 0 and decodes to zeros. One exception to s = m / 127: for
 *         m = FLT_MAX, 127 * (m / 127) rounds to infinity, so the encoder steps s one float
 *         towards 0 (the only m where that happens), and every decoded value stays finite.
 * These are the exact fp32 operations, in this order, so that another implementation (the
 * PyTorch reference, tests/torch/) gets the same bytes. Rounding assumes the default rounding
 * mode (to nearest); nothing in sailor changes it.
 *
 * Byte layout (little-endian; the code writes and reads bytes explicitly, so it is the same on
 * any host):
 *   fp32  count * 4 bytes: value i at 4 i, its IEEE-754 binary32 bits.
 *   bf16  count * 2 bytes: value i at 2 i, the upper 16 bits of its binary32 bits.
 *   int8  block after block, block b (values 256 b .. 256 b + len - 1) at byte 260 b:
 *         4 bytes its scale (binary32), then len bytes, q of each value as two's complement.
 *         So the encoding of in[256 k .. n) is the encoding of in[0 .. n) from byte 260 k on:
 *         a piece cut into chunks at multiples of 256 values encodes chunk by chunk to the same
 *         bytes as the piece does whole.
 *
 * Error of dec(enc(x)) against x, per value (what sl_outer_wire_error_bound fills):
 *   fp32  0.
 *   bf16  half a bf16 unit in the last place of x's binade: 2^(e - 8) for 2^e <= |x| < 2^(e+1),
 *         |x| >= 2^-126; 2^-134 for the subnormals; 0 for ±0; for a clamped x, |x| - BF16_MAX.
 *         All of them at most 2^-8 |x| for a normal x (bf16 keeps 8 significant bits; the
 *         clamp's error is below 2^-8 |x| as well; not 2^-9: 1 + 2^-8 decodes to 1).
 *   int8  s / 2 + 2^-22 m + 2^-142, s the block's stored scale, m its max|x|. The s / 2 is the
 *         rounding of q; the 2^-22 m (4 units of 2^-24 m, about 2^-14 of s / 2) covers the fp32
 *         roundings of x / s and of q * s (each at most 2^-24 of a value below about m), the
 *         step of s for m = FLT_MAX (127 ulp of s, about 2^-23 m, on a clamped q), and the
 *         rounding of the bound's own fp32 sum; the 2^-142 covers a subnormal s, whose
 *         division m / 127 rounds by up to 2^-150 absolute, so that 127 s may lie up to
 *         127 * 2^-150 below m (a clamped q), and the blocks whose s underflows to 0 (their
 *         values are at most 127 * 2^-150), with a factor 2 to spare for the subnormal
 *         roundings of the bound's sum. It matters only for m below about 2^-100.
 * tests/unit/test_runtime_outer_wire.c holds the formats to these bounds.
 *
 * Ownership: the caller owns every buffer; nothing is kept.
 */
#ifndef SL_RUNTIME_OUTER_WIRE_H
#define SL_RUNTIME_OUTER_WIRE_H

#include "util/err.h"

enum sl_outer_wire_format {
	SL_OUTER_WIRE_FP32,
	SL_OUTER_WIRE_BF16,
	SL_OUTER_WIRE_INT8,
};

/* Values per int8 block, each with its own scale. */
#define SL_OUTER_WIRE_INT8_BLOCK 256

/* The largest finite bf16, (2 - 2^-7) * 2^127: where bf16 clamps. */
#define SL_OUTER_WIRE_BF16_MAX 0x1.fep127f

/* "fp32", "bf16", "int8" -> *out; 0, or SL_EINPUT for any other name (the message names it and
 * lists the three). */
int sl_outer_wire_parse(const char *name, enum sl_outer_wire_format *out, struct sl_err *err);

/* The format's name as sl_outer_wire_parse reads it; "unknown" for a value outside the enum. */
const char *sl_outer_wire_name(enum sl_outer_wire_format f);

/* Bytes that count values take on the wire: 4 count, 2 count, or count + 4 per block of 256
 * (the last one possibly shorter). SL_EINPUT for a negative count or an unknown format. */
long long sl_outer_wire_bytes(enum sl_outer_wire_format f, long long count);

/* Encodes in[0 .. count) into out, sl_outer_wire_bytes(f, count) bytes. A value that is not
 * finite is refused: returns SL_EINPUT, sets *bad_index (if bad_index is non-NULL) to the lowest
 * index of such a value and err's message to it, and leaves out holding nothing meaningful.
 * Deterministic: the bytes depend on in only. SL_EINPUT for an unknown format. */
int sl_outer_wire_encode(enum sl_outer_wire_format f, const float *in, long long count,
			 unsigned char *out, long long *bad_index, struct sl_err *err);

/* out[i] = the value that in's i-th encoded value decodes to, for i < count. in holds
 * sl_outer_wire_bytes(f, count) bytes of sl_outer_wire_encode's output. */
void sl_outer_wire_decode(enum sl_outer_wire_format f, const unsigned char *in, long long count,
			  float *out);

/* acc[i] = acc[i] + weight * (decoded value i), in fp32 with both roundings (product, then sum;
 * never fused), for i < count: one island's term of the average, accumulated in island order.
 * The same bits as sl_outer_wire_decode followed by that loop. */
void sl_outer_wire_decode_add(enum sl_outer_wire_format f, const unsigned char *in,
			      long long count, float weight, float *acc);

/* bound[i] = the largest |dec(enc(x)) - x| the format allows for x = in[i] within in[0 .. count)
 * encoded as one piece (int8: the bound depends on x's block, blocks counted from in[0]); the
 * formulas are at the top of this file. +inf for a value that is not finite (it would be
 * refused), and int8 gives +inf to every value of a block holding one. */
void sl_outer_wire_error_bound(enum sl_outer_wire_format f, const float *in, long long count,
			       float *bound);

#endif
