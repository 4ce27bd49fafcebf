/* Vectorisable scalar math for the CPU kernels: exp, tanh and the tanh-approximated GELU.
 *
 * glibc's expf/tanhf are correct but scalar (about 5-20 ns each); the softmax over 50257 logits
 * and the GELU over the MLP's activations call them tens of millions of times per step. These
 * versions are branch-free straight-line code that GCC vectorises inside `#pragma omp simd`
 * loops, so each kernel can be compiled for AVX-512/AVX2/SSE2 (target_clones) and stay fast.
 *
 * Accuracy (checked against expf/tanhf in tests/unit/test_train_kernels.c): relative error below
 * 2e-7 for exp over [-87, 88]; absolute error below 1e-6 for tanh. Inputs outside the exp range
 * are clamped (exp(-100) returns exp(-87) ~ 1.6e-38, which every caller treats as zero).
 *
 * exp: Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2, with ln2 split in a exactly
 * representable high part and a correction (Cephes expf.c, S. Moshier), degree-6 polynomial
 * for e^r (Cephes coefficients), then scaling by 2^n built in the exponent bits.
 * tanh(u) = 1 - 2 / (exp(2u) + 1), exact at both saturations.
 * GELU (tanh form, Hendrycks & Gimpel 2016, as in GPT-2 and torch's approximate='tanh'):
 *   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 */
#ifndef SL_TRAIN_CPU_VMATH_H
#define SL_TRAIN_CPU_VMATH_H

#include <stdint.h>
#include <string.h>

/* Compile a kernel for several instruction sets, chosen at load time by the CPU (GCC ifunc).
 * Sanitizer builds keep one version so reports point at plain code. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
	!defined(__SANITIZE_ADDRESS__)
#define SL_KERNEL_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SL_KERNEL_CLONES
#endif

static inline float sl_vexpf(float x)
{
	x = x < -87.0f ? -87.0f : x;
	x = x > 88.0f ? 88.0f : x;
	/* n = round(x / ln2) by the 1.5 * 2^23 trick (round-to-nearest, no branches) */
	float n = x * 1.44269504088896341f + 12582912.0f;
	n -= 12582912.0f;
	float r = x - n * 0.693359375f;
	r = r - n * -2.12194440e-4f;
	float p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * (r * r) + r + 1.0f;
	int32_t e = (int32_t)n + 127;
	uint32_t bits = (uint32_t)e << 23;
	float scale;
	memcpy(&scale, &bits, sizeof(scale));
	return p * scale;
}

static inline float sl_vtanhf(float u)
{
	return 1.0f - 2.0f / (sl_vexpf(2.0f * u) + 1.0f);
}

#define SL_GELU_SQRT_2_OVER_PI 0.7978845608028654f
#define SL_GELU_COEFF 0.044715f

static inline float sl_vgeluf(float x)
{
	float u = SL_GELU_SQRT_2_OVER_PI * (x + SL_GELU_COEFF * x * x * x);
	return 0.5f * x * (1.0f + sl_vtanhf(u));
}

/* d gelu / dx = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2), t = tanh(u). */
static inline float sl_vgelu_gradf(float x)
{
	float u = SL_GELU_SQRT_2_OVER_PI * (x + SL_GELU_COEFF * x * x * x);
	float t = sl_vtanhf(u);
	float du = SL_GELU_SQRT_2_OVER_PI * (1.0f + 3.0f * SL_GELU_COEFF * x * x);
	return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

#endif
