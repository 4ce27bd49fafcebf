/* CRC-32 (crc32.h): carry-less multiplication folding where the CPU has PCLMULQDQ, slicing-by-8
 * elsewhere and for the ends of a buffer. The tables and the CPU check are made once, on first
 * use; both are idempotent, so a race between two first calls writes the same values. */
#include "train/crc32.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SL_CRC32_FOLDING 1
#endif

static uint32_t table[8][256];
static int table_ready;

static void build_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
	table_ready = 1;
}

/* The bit-reflected CRC register (no inversions) over len bytes, 8 at a time. */
static uint32_t slice_by_8(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
			      (uint32_t)p[7] << 24;
		crc = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^
		      table[5][(lo >> 16) & 0xFF] ^ table[4][lo >> 24] ^ table[3][hi & 0xFF] ^
		      table[2][(hi >> 8) & 0xFF] ^ table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
	return crc;
}

#ifdef SL_CRC32_FOLDING
/* Folding with carry-less multiplication (Gopal et al., "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ Instruction", Intel 2009): four 128-bit lanes are carried over 64
 * bytes at a time by multiplying with x^(512+64) and x^512 mod P, folded into one lane, then
 * reduced to 32 bits (a 64-bit fold and a Barrett reduction). The constants are those powers of
 * x modulo the reflected polynomial, bit-reflected and shifted by one, as the paper derives
 * them. The CRC is linear, so folding the register into the first block is how it continues. */
#define K1 0x154442bd4ull  /* x^(4*128+32) mod P, for the 64-byte loop */
#define K2 0x1c6e41596ull  /* x^(4*128-32) mod P */
#define K3 0x1751997d0ull  /* x^(128+32) mod P, for 16-byte folds */
#define K4 0x0ccaa009eull  /* x^(128-32) mod P */
#define K5 0x163cd6124ull  /* x^64 mod P, the last 64-to-32 fold */
#define POLY 0x1db710641ull /* P itself, reflected */
#define MU 0x1f7011641ull   /* floor(x^64 / P), reflected: Barrett's constant */

__attribute__((target("pclmul,sse4.1"))) static __m128i fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* The register over len bytes, len a multiple of 16 and at least 64. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t folded(uint32_t crc,
								 const unsigned char *p, size_t len)
{
	__m128i x1 = _mm_loadu_si128((const __m128i *)p);
	__m128i x2 = _mm_loadu_si128((const __m128i *)(p + 16));
	__m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32));
	__m128i x4 = _mm_loadu_si128((const __m128i *)(p + 48));
	x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
	p += 64;
	len -= 64;
	const __m128i k12 = _mm_set_epi64x((long long)K2, (long long)K1);
	while (len >= 64) {
		x1 = _mm_xor_si128(fold(x1, k12), _mm_loadu_si128((const __m128i *)p));
		x2 = _mm_xor_si128(fold(x2, k12), _mm_loadu_si128((const __m128i *)(p + 16)));
		x3 = _mm_xor_si128(fold(x3, k12), _mm_loadu_si128((const __m128i *)(p + 32)));
		x4 = _mm_xor_si128(fold(x4, k12), _mm_loadu_si128((const __m128i *)(p + 48)));
		p += 64;
		len -= 64;
	}
	const __m128i k34 = _mm_set_epi64x((long long)K4, (long long)K3);
	x1 = _mm_xor_si128(fold(x1, k34), x2);
	x1 = _mm_xor_si128(fold(x1, k34), x3);
	x1 = _mm_xor_si128(fold(x1, k34), x4);
	while (len >= 16) {
		x1 = _mm_xor_si128(fold(x1, k34), _mm_loadu_si128((const __m128i *)p));
		p += 16;
		len -= 16;
	}
	/* 128 -> 64 bits: the low half times K4, added to the high half (32 zero bits appended) */
	x1 = _mm_xor_si128(_mm_clmulepi64_si128(k34, x1, 0x01), _mm_srli_si128(x1, 8));
	/* 64 -> 32 bits with K5 */
	const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i t = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), _mm_set_epi64x(0, (long long)K5),
					 0x00);
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 4), t);
	/* Barrett reduction to the 32-bit remainder */
	const __m128i poly_mu = _mm_set_epi64x((long long)MU, (long long)POLY);
	t = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly_mu, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), poly_mu, 0x00);
	x1 = _mm_xor_si128(x1, t);
	return (uint32_t)_mm_extract_epi32(x1, 1);
}

static int has_pclmul(void)
{
	static int known, has;
	if (!known) {
		__builtin_cpu_init();
		has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
		known = 1;
	}
	return has;
}
#endif

uint32_t sl_crc32(uint32_t crc, const void *data, size_t len)
{
	if (!table_ready)
		build_tables();
	const unsigned char *p = data;
	crc = ~crc;
#ifdef SL_CRC32_FOLDING
	if (len >= 64 && has_pclmul()) {
		size_t whole = len & ~(size_t)15;
		crc = folded(crc, p, whole);
		p += whole;
		len -= whole;
	}
#endif
	return ~slice_by_8(crc, p, len);
}

uint32_t sl_crc32_portable(uint32_t crc, const void *data, size_t len)
{
	if (!table_ready)
		build_tables();
	return ~slice_by_8(~crc, data, len);
}
