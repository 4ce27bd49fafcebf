/* Random numbers of training, all derived from the user's --seed.
 *
 * Two kinds:
 *  - counter-based normals for weight initialisation: sample i of a stream is a pure function of
 *    (seed, stream key, i), so any worker can initialise any slice of any tensor (a pipeline
 *    stage, a tensor-parallel shard) and get exactly the values a single process would;
 *  - a small sequential generator (xoshiro256**) for the per-epoch data shuffle; its whole
 *    state is derived from (seed, epoch), so a checkpoint only needs those two numbers.
 * Sources: splitmix64 and xoshiro256** by Blackman & Vigna (prng.di.unimi.it, public domain);
 * FNV-1a 64-bit (Fowler, Noll, Vo); Box-Muller transform (1958).
 */
#ifndef SL_TRAIN_RNG_H
#define SL_TRAIN_RNG_H

#include <stdint.h>

/* Finaliser of splitmix64: a bijective 64-bit mix. */
uint64_t sl_mix64(uint64_t x);
/* FNV-1a 64 of a string (stream keys from tensor names). */
uint64_t sl_hash_string(const char *s);
/* Key of a named stream under a seed. */
uint64_t sl_rng_stream_key(uint64_t seed, const char *name);
/* Standard normal number `index` of the stream `key` (Box-Muller on the pair index/2: even
 * indices take the cosine branch, odd the sine branch). */
float sl_rng_normal_at(uint64_t key, uint64_t index);

struct sl_rng {
	uint64_t s[4];
};

void sl_rng_seed(struct sl_rng *rng, uint64_t seed);
uint64_t sl_rng_next(struct sl_rng *rng);
/* Uniform in [0, n), n > 0, without modulo bias (Lemire's multiply-shift with rejection). */
uint64_t sl_rng_below(struct sl_rng *rng, uint64_t n);

#endif
