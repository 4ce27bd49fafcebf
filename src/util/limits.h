/* The valid ranges of every number sailor reads from a file or the command line, in one place.
 *
 * Why limits at all: a number that is well formed but absurd (a global batch of 2^40 samples, a
 * model of 24,000 layers, a token id of 2^31) must not overflow the arithmetic done on it, nor
 * cost time or memory out of proportion to a plan that could really run. Each bound below is
 * far above anything a real job uses (the largest published dense models have ~130 layers,
 * hidden 16,384, vocabularies of ~256k, global batches of a few thousand sequences) and low
 * enough that the products the simulator, planner and trainer form stay exact in 64 bits:
 * e.g. SL_MAX_GLOBAL_BATCH * SL_MAX_SEQ_LEN = 2^36 tokens per iteration.
 *
 * A value outside its range gets one message naming the field (or option), the value and the
 * range, exit 1 for a file, 2 for an option. README "Bad input and limits" lists them; change
 * both together. The plan's own bounds (SL_PLAN_MAX_STAGES, SL_PLAN_MAX_PIPELINES, TP) live in
 * plan/plan.h, the catalogue's in cluster/catalogue.h.
 */
#ifndef SL_UTIL_LIMITS_H
#define SL_UTIL_LIMITS_H

/* A JSON file (plan, pool, profile, model, catalogue, network fits, vocabulary): the shipped ones
 * are at most a few MiB (GPT-2's encoder.json: 1 MiB). */
#define SL_MAX_JSON_FILE_BYTES (64 << 20)

/* Batches (samples = sequences). The simulator's 1F1B schedule is O(micro-batches x stages), so
 * this bound also bounds a simulation's run time (a global batch of 2048 sequences is large today:
 * 65,536 is 32 times that). */
#define SL_MAX_GLOBAL_BATCH (1LL << 16)
#define SL_MAX_MICRO_BATCH (1 << 16)

/* Model hyper-parameters ("layers" counts transformer blocks). */
#define SL_MAX_MODEL_BLOCKS 1024
#define SL_MAX_HIDDEN (1 << 16)
#define SL_MAX_HEADS 1024
#define SL_MAX_FFN_HIDDEN (1 << 18)
#define SL_MAX_SEQ_LEN (1 << 20)
#define SL_MAX_VOCAB (1 << 24)

/* GPUs of one (type, zone) in a pool or trace row, after adding repeated entries. */
#define SL_MAX_POOL_COUNT 1000000

/* Measured or fitted times (profiles, measured runs): 0 or a normal double in
 * [SL_MIN_TIME_S, SL_MAX_TIME_S]. A denormal or nanosecond-fraction time is a unit mistake
 * (milliseconds written as seconds the other way round) or garbage, never a measurement. */
#define SL_MIN_TIME_S 1e-12
#define SL_MAX_TIME_S 1e6

/* Rows of a trace: each costs a pool (32 KiB: a count per GPU type and zone of the catalogue's
 * few hundred) and possibly a search; a week at one row a minute is 10,080. */
#define SL_MAX_TRACE_ROWS 10000

/* Zones with GPUs in one pool the planner searches: its zone sets, fill orders and replica
 * assignments are tables over the pool's zones, never over the catalogue's few hundred. */
#define SL_MAX_SEARCH_ZONES 32

/* Trace timestamps: unix seconds, finite, 0 to year ~2^31 s times 16. */
#define SL_MAX_TIMESTAMP_S 3.4e10

/* Measured peak memory of a run (bytes): at most 1 PiB. */
#define SL_MAX_MEMORY_BYTES 1.125899906842624e15

/* The GPU catalogue and network fits: far above any device or link that exists. */
#define SL_MAX_GPU_USD_PER_HOUR 1e6
#define SL_MAX_GPU_FLOPS 1e18
#define SL_MAX_BANDWIDTH_BPS 1e15
#define SL_MAX_USD_PER_GB 1e6
/* A device type's peak FLOP/s and memory bandwidth are 0 (not known) or at least these: far
 * below any device that trains a model (one CPU core does ~1e10 FLOP/s, ~1e10 B/s). Layer times
 * of a type without a profile are its stand-in's scaled by the ratio of the two peaks
 * (sim/estimate.c), so a denormal peak made that ratio, and the iteration time, infinite. With
 * these floors the ratio is at most 1e12 and every estimated time stays finite. */
#define SL_MIN_GPU_FLOPS 1e6
#define SL_MIN_MEMORY_BANDWIDTH_BPS 1e6
/* Coefficients of a bandwidth fit (GB/s as a quadratic in log2 of the message size in MB). */
#define SL_MAX_FIT_COEFF 1e4
#define SL_MIN_FIT_COEFF 1e-12

/* The trainer: CPU threads, steps, and the logging/checkpoint intervals counted in steps. */
#define SL_MAX_THREADS 256
#define SL_MAX_MICROBATCH_TOKENS (1 << 24) /* micro-batch x sequence: the kernels use int */
#define SL_MAX_STEPS (1LL << 31)
/* Windows of a held-out evaluation (--val-windows): a token file holds at most 2^32 windows;
 * a larger value than the file holds evaluates the whole file. */
#define SL_MAX_VAL_WINDOWS (1LL << 31)

/* Optimizer hyper-parameters (doubles). */
#define SL_MAX_LR 10.0
#define SL_MAX_WEIGHT_DECAY 10.0
#define SL_MAX_GRAD_CLIP 1e6
#define SL_MAX_ADAM_BETA 0.999999 /* below 1: the bias correction divides by 1 - beta^t */
#define SL_MIN_ADAM_EPS 1e-30
#define SL_MAX_ADAM_EPS 1.0

/* Planner constraints. */
#define SL_MAX_COST_USD 1e12
#define SL_MAX_THROUGHPUT_IT_S 1e9
#define SL_MAX_TOP_PLANS 100

/* Tokenizer vocabularies (encoder.json ids are dense: 0..N-1) and merges lines. */
#define SL_MAX_BPE_VOCAB (1 << 24)
#define SL_MAX_BPE_MERGES (1 << 24)

#endif
