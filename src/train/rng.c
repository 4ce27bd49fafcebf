/* Random numbers: see rng.h for the kinds and their sources. */
#include "train/rng.h"

#include <math.h>

uint64_t sl_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t sl_hash_string(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t sl_rng_stream_key(uint64_t seed, const char *name)
{
	return sl_mix64(sl_mix64(seed) ^ sl_hash_string(name));
}

float sl_rng_normal_at(uint64_t key, uint64_t index)
{
	uint64_t bits = sl_mix64(key ^ sl_mix64(index >> 1));
	/* two uniforms in (0, 1] and [0, 1) from the 32-bit halves */
	double u1 = ((double)(bits >> 32) + 1.0) / 4294967296.0;
	double u2 = (double)(bits & 0xffffffffULL) / 4294967296.0;
	double r = sqrt(-2.0 * log(u1));
	double angle = 6.283185307179586 * u2;
	return (float)(r * ((index & 1) ? sin(angle) : cos(angle)));
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void sl_rng_seed(struct sl_rng *rng, uint64_t seed)
{
	uint64_t x = seed;
	for (int i = 0; i < 4; i++) {
		x += 0x9e3779b97f4a7c15ULL;
		rng->s[i] = sl_mix64(x);
	}
}

uint64_t sl_rng_next(struct sl_rng *rng)
{
	uint64_t *s = rng->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t sl_rng_below(struct sl_rng *rng, uint64_t n)
{
	/* 128-bit product: the high word is uniform in [0, n) once the low word passes the
	 * threshold (D. Lemire, "Fast Random Integer Generation in an Interval", 2019). */
	uint64_t threshold = (0 - n) % n;
	for (;;) {
		unsigned __int128 m = (unsigned __int128)sl_rng_next(rng) * n;
		if ((uint64_t)m >= threshold)
			return (uint64_t)(m >> 64);
	}
}
