/* Unit tests for the CPU kernels (src/train/cpu/): each forward against a naive double-precision
 * implementation written here, each backward against central finite differences of that naive
 * forward (h = 1e-5 in double, so the reference gradient is exact to ~1e-9), with odd shapes and
 * two threads so that the threaded splits are exercised. Tolerances are relative 2-norm errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "train/cpu/kernels.h"
#include "train/cpu/vmath.h"
#include "train/rng.h"

static struct sl_rng rng;

static float uniform(void) { return (float)((double)(sl_rng_next(&rng) >> 11) / 9007199254740992.0); }

static float *randv(size_t n, float scale)
{
	float *v = malloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		v[i] = scale * (2.0f * uniform() - 1.0f);
	return v;
}

static double *to_double(const float *v, size_t n)
{
	double *d = malloc(n * sizeof(double));
	for (size_t i = 0; i < n; i++)
		d[i] = v[i];
	return d;
}

static double rel_err_fd(const float *got, const double *want, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		num += (got[i] - want[i]) * (got[i] - want[i]);
		den += want[i] * want[i];
	}
	return sqrt(num) / (sqrt(den) > 1e-30 ? sqrt(den) : 1e-30);
}

/* Central differences of loss(x) for every element of x (x is modified and restored). */
typedef double (*loss_fn)(const double *x, void *ctx);
static double *fd_grad(loss_fn loss, double *x, size_t n, void *ctx)
{
	double *g = malloc(n * sizeof(double));
	const double h = 1e-5;
	for (size_t i = 0; i < n; i++) {
		double saved = x[i];
		x[i] = saved + h;
		double up = loss(x, ctx);
		x[i] = saved - h;
		double down = loss(x, ctx);
		x[i] = saved;
		g[i] = (up - down) / (2 * h);
	}
	return g;
}

static int setup(void **state)
{
	(void)state;
	sl_rng_seed(&rng, 42);
	assert_int_equal(sl_cpu_set_threads(2, NULL), 0);
	return 0;
}

/* --- vector math --- */

static void vexp_and_gelu_are_accurate(void **state)
{
	(void)state;
	double worst_exp = 0, worst_tanh = 0, worst_gelu = 0;
	for (int i = 0; i <= 200000; i++) {
		float x = -87.0f + 175.0f * (float)i / 200000.0f;
		double e = exp((double)x);
		double r = fabs(sl_vexpf(x) - e) / e;
		worst_exp = r > worst_exp ? r : worst_exp;
		float u = -12.0f + 24.0f * (float)i / 200000.0f;
		double t = fabs(sl_vtanhf(u) - tanh((double)u));
		worst_tanh = t > worst_tanh ? t : worst_tanh;
		double xd = u;
		double ref = 0.5 * xd * (1.0 + tanh(0.7978845608028654 * (xd + 0.044715 * xd * xd * xd)));
		double g = fabs(sl_vgeluf(u) - ref) / (fabs(ref) > 1.0 ? fabs(ref) : 1.0);
		worst_gelu = g > worst_gelu ? g : worst_gelu;
	}
	assert_true(worst_exp < 3e-7);
	assert_true(worst_tanh < 1e-6);
	assert_true(worst_gelu < 2e-6);
	assert_true(sl_vexpf(-1000.0f) < 1e-37f && sl_vexpf(-1000.0f) >= 0.0f);
}

/* --- matmul --- */

struct mm_ctx {
	int M, K, N, which; /* which: 0 inp, 1 w, 2 bias */
	double *inp, *w, *b, *dout;
};

static double mm_loss(const double *x, void *vctx)
{
	struct mm_ctx *c = vctx;
	const double *inp = c->which == 0 ? x : c->inp, *w = c->which == 1 ? x : c->w;
	const double *b = c->which == 2 ? x : c->b;
	double L = 0;
	for (int i = 0; i < c->M; i++)
		for (int j = 0; j < c->N; j++) {
			double s = b[j];
			for (int k = 0; k < c->K; k++)
				s += inp[i * c->K + k] * w[j * c->K + k];
			L += c->dout[i * c->N + j] * s;
		}
	return L;
}

static void matmul_matches_naive(void **state)
{
	(void)state;
	const int M = 21, K = 17, N = 23;
	float *inp = randv((size_t)M * K, 1), *w = randv((size_t)N * K, 1), *b = randv(N, 1);
	float *dout = randv((size_t)M * N, 1), *res = randv((size_t)M * N, 1);
	float *out = malloc(sizeof(float) * M * N), *out2 = malloc(sizeof(float) * M * N);
	sl_matmul_forward(out, inp, w, b, M, K, N);
	sl_matmul_forward_residual(out2, res, inp, w, b, M, K, N);
	double worst = 0, worst_res = 0;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double s = b[j];
			for (int k = 0; k < K; k++)
				s += (double)inp[i * K + k] * w[j * K + k];
			worst = fmax(worst, fabs(out[i * N + j] - s));
			worst_res = fmax(worst_res, fabs(out2[i * N + j] - (s + res[i * N + j])));
		}
	assert_true(worst < 1e-4);
	assert_true(worst_res < 1e-4);

	float *dinp = calloc((size_t)M * K, sizeof(float)), *dw = calloc((size_t)N * K, sizeof(float));
	float *db = calloc(N, sizeof(float));
	sl_matmul_backward(dinp, dw, db, dout, inp, w, M, K, N);
	struct mm_ctx c = {M, K, N, 0, to_double(inp, (size_t)M * K), to_double(w, (size_t)N * K),
			   to_double(b, N), to_double(dout, (size_t)M * N)};
	double *g = fd_grad(mm_loss, c.inp, (size_t)M * K, &c);
	assert_true(rel_err_fd(dinp, g, (size_t)M * K) < 1e-5);
	free(g);
	c.which = 1;
	g = fd_grad(mm_loss, c.w, (size_t)N * K, &c);
	assert_true(rel_err_fd(dw, g, (size_t)N * K) < 1e-5);
	free(g);
	c.which = 2;
	g = fd_grad(mm_loss, c.b, N, &c);
	assert_true(rel_err_fd(db, g, N) < 1e-5);
	free(g);
	/* parameter gradients accumulate */
	float before = dw[7];
	sl_matmul_backward(NULL, dw, NULL, dout, inp, w, M, K, N);
	assert_true(fabsf(dw[7] - 2 * before) <= 1e-4f * fabsf(before) + 1e-5f);
	free(inp), free(w), free(b), free(dout), free(res), free(out), free(out2), free(dinp),
		free(dw), free(db), free(c.inp), free(c.w), free(c.b), free(c.dout);
}

static void sgemm_case(int M, int N, int K)
{
	float *A = randv((size_t)M * K, 1), *B = randv((size_t)K * N, 1);
	float *At = malloc(sizeof(float) * M * K), *Bt = malloc(sizeof(float) * K * N);
	for (int i = 0; i < M; i++)
		for (int k = 0; k < K; k++)
			At[k * M + i] = A[i * K + k];
	for (int k = 0; k < K; k++)
		for (int j = 0; j < N; j++)
			Bt[j * K + k] = B[k * N + j];
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			float *C = calloc((size_t)M * N, sizeof(float));
			sl_sgemm(ta, tb, M, N, K, 1.0f, ta ? At : A, ta ? M : K, tb ? Bt : B, tb ? K : N,
				 0.0f, C, N);
			double worst = 0;
			for (int i = 0; i < M; i++)
				for (int j = 0; j < N; j++) {
					double s = 0;
					for (int k = 0; k < K; k++)
						s += (double)A[i * K + k] * B[k * N + j];
					worst = fmax(worst, fabs(C[i * N + j] - s));
				}
			assert_true(worst < 1e-4);
			free(C);
		}
	free(A), free(B), free(At), free(Bt);
}

static void threaded_sgemm_matches_serial(void **state)
{
	(void)state;
	/* large enough to be split across the two threads: by rows, then by columns */
	sgemm_case(131, 77, 45);
	sgemm_case(77, 131, 45);
}

/* --- layernorm --- */

struct ln_ctx {
	int rows, C, which;
	double *x, *w, *b, *dout;
};

static double ln_loss(const double *v, void *vctx)
{
	struct ln_ctx *c = vctx;
	const double *x = c->which == 0 ? v : c->x, *w = c->which == 1 ? v : c->w;
	const double *b = c->which == 2 ? v : c->b;
	double L = 0;
	for (int i = 0; i < c->rows; i++) {
		double m = 0, var = 0;
		for (int j = 0; j < c->C; j++)
			m += x[i * c->C + j];
		m /= c->C;
		for (int j = 0; j < c->C; j++)
			var += (x[i * c->C + j] - m) * (x[i * c->C + j] - m);
		double s = 1.0 / sqrt(var / c->C + 1e-5);
		for (int j = 0; j < c->C; j++)
			L += c->dout[i * c->C + j] * ((x[i * c->C + j] - m) * s * w[j] + b[j]);
	}
	return L;
}

static void layernorm_matches_reference(void **state)
{
	(void)state;
	const int rows = 37, C = 83;
	size_t n = (size_t)rows * C;
	float *x = randv(n, 2), *w = randv(C, 1), *b = randv(C, 1), *dout = randv(n, 1);
	float *out = malloc(n * sizeof(float)), *mean = malloc(rows * sizeof(float)),
	      *rstd = malloc(rows * sizeof(float));
	sl_layernorm_forward(out, mean, rstd, x, w, b, rows, C);
	struct ln_ctx c = {rows, C, 0, to_double(x, n), to_double(w, C), to_double(b, C),
			   to_double(dout, n)};
	/* forward: compare via the loss with dout one-hot would be slow; check each row directly */
	for (int i = 0; i < rows; i++) {
		double m = 0, var = 0;
		for (int j = 0; j < C; j++)
			m += x[i * C + j];
		m /= C;
		for (int j = 0; j < C; j++)
			var += (x[i * C + j] - m) * (x[i * C + j] - m);
		double s = 1.0 / sqrt(var / C + 1e-5);
		for (int j = 0; j < C; j++)
			assert_true(fabs(out[i * C + j] - ((x[i * C + j] - m) * s * w[j] + b[j])) < 1e-5);
	}
	float *dx = calloc(n, sizeof(float)), *dw = calloc(C, sizeof(float)),
	      *db = calloc(C, sizeof(float));
	sl_layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, rows, C);
	double *g = fd_grad(ln_loss, c.x, n, &c);
	assert_true(rel_err_fd(dx, g, n) < 1e-4);
	free(g);
	c.which = 1;
	g = fd_grad(ln_loss, c.w, C, &c);
	assert_true(rel_err_fd(dw, g, C) < 1e-5);
	free(g);
	c.which = 2;
	g = fd_grad(ln_loss, c.b, C, &c);
	assert_true(rel_err_fd(db, g, C) < 1e-5);
	free(g);
	free(x), free(w), free(b), free(dout), free(out), free(mean), free(rstd), free(dx), free(dw),
		free(db), free(c.x), free(c.w), free(c.b), free(c.dout);
}

/* --- gelu --- */

struct ew_ctx {
	size_t n;
	double *dout;
};

static double gelu_ref(double x)
{
	return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static double gelu_loss(const double *x, void *vctx)
{
	struct ew_ctx *c = vctx;
	double L = 0;
	for (size_t i = 0; i < c->n; i++)
		L += c->dout[i] * gelu_ref(x[i]);
	return L;
}

static void gelu_matches_reference(void **state)
{
	(void)state;
	const size_t n = 9001;
	float *x = randv(n, 6), *dout = randv(n, 1), *y = malloc(n * sizeof(float)),
	      *dx = malloc(n * sizeof(float));
	sl_gelu_forward(y, x, (long)n);
	for (size_t i = 0; i < n; i++)
		assert_true(fabs(y[i] - gelu_ref(x[i])) < 2e-6 * fmax(1.0, fabs(gelu_ref(x[i]))));
	sl_gelu_backward(dx, x, dout, (long)n);
	struct ew_ctx c = {n, to_double(dout, n)};
	double *xd = to_double(x, n);
	double *g = fd_grad(gelu_loss, xd, n, &c);
	assert_true(rel_err_fd(dx, g, n) < 1e-5);
	/* in place, as the block uses it */
	memcpy(dx, dout, n * sizeof(float));
	sl_gelu_backward(dx, x, dx, (long)n);
	assert_true(rel_err_fd(dx, g, n) < 1e-5);
	free(x), free(dout), free(y), free(dx), free(c.dout), free(xd), free(g);
}

/* --- attention --- */

struct att_ctx {
	int B, T, NH, hs;
	double *dy;
};

static void att_ref(double *y, const double *qkv, int B, int T, int NH, int hs)
{
	int C = NH * hs;
	double *s = malloc(sizeof(double) * T);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++)
			for (int i = 0; i < T; i++) {
				const double *q = qkv + ((size_t)b * T + i) * 3 * C + h * hs;
				double max = -1e300, sum = 0;
				for (int j = 0; j <= i; j++) {
					const double *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
					double d = 0;
					for (int e = 0; e < hs; e++)
						d += q[e] * k[e];
					s[j] = d / sqrt((double)hs);
					max = fmax(max, s[j]);
				}
				for (int j = 0; j <= i; j++)
					sum += (s[j] = exp(s[j] - max));
				for (int e = 0; e < hs; e++) {
					double acc = 0;
					for (int j = 0; j <= i; j++)
						acc += s[j] / sum *
						       qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * hs + e];
					y[((size_t)b * T + i) * C + h * hs + e] = acc;
				}
			}
	free(s);
}

static double att_loss(const double *qkv, void *vctx)
{
	struct att_ctx *c = vctx;
	size_t n = (size_t)c->B * c->T * c->NH * c->hs;
	double *y = malloc(n * sizeof(double));
	att_ref(y, qkv, c->B, c->T, c->NH, c->hs);
	double L = 0;
	for (size_t i = 0; i < n; i++)
		L += c->dy[i] * y[i];
	free(y);
	return L;
}

static void attention_case(int B, int T, int NH, int hs)
{
	int C = NH * hs;
	size_t nq = (size_t)B * T * 3 * C, ny = (size_t)B * T * C;
	float *qkv = randv(nq, 1), *dy = randv(ny, 1);
	float *y = malloc(ny * sizeof(float)), *att = malloc(sizeof(float) * B * NH * T * T);
	float *dqkv = malloc(nq * sizeof(float));
	float *scratch = malloc(sl_attention_scratch_floats(T, 2) * sizeof(float));
	sl_attention_forward(y, att, qkv, B, T, NH, hs);
	double *qd = to_double(qkv, nq), *yref = malloc(ny * sizeof(double));
	att_ref(yref, qd, B, T, NH, hs);
	assert_true(rel_err_fd(y, yref, ny) < 1e-5);
	sl_attention_backward(dqkv, scratch, 2, dy, att, qkv, B, T, NH, hs);
	struct att_ctx c = {B, T, NH, hs, to_double(dy, ny)};
	double *g = fd_grad(att_loss, qd, nq, &c);
	assert_true(rel_err_fd(dqkv, g, nq) < 1e-4);
	free(qkv), free(dy), free(y), free(att), free(dqkv), free(scratch), free(qd), free(yref),
		free(c.dy), free(g);
}

static void attention_matches_reference(void **state)
{
	(void)state;
	attention_case(2, 7, 3, 4);   /* one row block */
	attention_case(1, 70, 2, 3);  /* two row blocks, the second partial */
}

/* --- embedding and cross-entropy --- */

static void embedding_matches_naive(void **state)
{
	(void)state;
	const int B = 3, T = 5, C = 70, V = 11;
	int32_t tokens[15];
	for (int i = 0; i < B * T; i++)
		tokens[i] = (int32_t)(sl_rng_next(&rng) % 4); /* repeats: scatter-add conflicts */
	float *wte = randv((size_t)V * C, 1), *wpe = randv((size_t)T * C, 1);
	float *out = malloc(sizeof(float) * B * T * C), *dout = randv((size_t)B * T * C, 1);
	float *dwte = calloc((size_t)V * C, sizeof(float)), *dwpe = calloc((size_t)T * C, sizeof(float));
	sl_embedding_forward(out, tokens, wte, wpe, B, T, C);
	sl_embedding_backward(dwte, dwpe, dout, tokens, B, T, C);
	double *rte = calloc((size_t)V * C, sizeof(double)), *rpe = calloc((size_t)T * C, sizeof(double));
	for (int i = 0; i < B * T; i++)
		for (int j = 0; j < C; j++) {
			assert_true(out[i * C + j] == wte[tokens[i] * C + j] + wpe[(i % T) * C + j]);
			rte[tokens[i] * C + j] += dout[i * C + j];
			rpe[(i % T) * C + j] += dout[i * C + j];
		}
	assert_true(rel_err_fd(dwte, rte, (size_t)V * C) < 1e-6);
	assert_true(rel_err_fd(dwpe, rpe, (size_t)T * C) < 1e-6);
	free(wte), free(wpe), free(out), free(dout), free(dwte), free(dwpe), free(rte), free(rpe);
}

struct ce_ctx {
	int rows, V;
	const int32_t *targets;
	double scale;
};

static double ce_loss(const double *x, void *vctx)
{
	struct ce_ctx *c = vctx;
	double L = 0;
	for (int r = 0; r < c->rows; r++) {
		const double *row = x + (size_t)r * c->V;
		double max = row[0], sum = 0;
		for (int j = 0; j < c->V; j++)
			max = fmax(max, row[j]);
		for (int j = 0; j < c->V; j++)
			sum += exp(row[j] - max);
		L += c->scale * (max + log(sum) - row[c->targets[r]]);
	}
	return L;
}

static void crossentropy_matches_reference(void **state)
{
	(void)state;
	const int rows = 9, V = 301;
	int32_t targets[9];
	for (int r = 0; r < rows; r++)
		targets[r] = (int32_t)(sl_rng_next(&rng) % V);
	size_t n = (size_t)rows * V;
	float *logits = randv(n, 8), *losses = malloc(rows * sizeof(float)),
	      *lse = malloc(rows * sizeof(float)), *d = malloc(n * sizeof(float));
	sl_crossentropy_forward(losses, lse, logits, targets, rows, V);
	double *xd = to_double(logits, n);
	for (int r = 0; r < rows; r++) {
		struct ce_ctx one = {1, V, &targets[r], 1.0};
		assert_true(fabs(losses[r] - ce_loss(xd + (size_t)r * V, &one)) < 1e-5);
	}
	memcpy(d, logits, n * sizeof(float));
	sl_crossentropy_backward(d, d, lse, targets, rows, V, 0.25f); /* in place */
	struct ce_ctx c = {rows, V, targets, 0.25};
	double *g = fd_grad(ce_loss, xd, n, &c);
	assert_true(rel_err_fd(d, g, n) < 1e-5);
	free(logits), free(losses), free(lse), free(d), free(xd), free(g);
}

/* --- AdamW and the norm --- */

static void adamw_matches_formula(void **state)
{
	(void)state;
	const long n = 20001;
	float *p = randv((size_t)n, 1), *m = calloc((size_t)n, sizeof(float)),
	      *v = calloc((size_t)n, sizeof(float));
	double *pd = to_double(p, (size_t)n), *md = calloc((size_t)n, sizeof(double)),
	       *vd = calloc((size_t)n, sizeof(double));
	const double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1, clip = 0.5;
	for (int t = 1; t <= 3; t++) {
		float *g = randv((size_t)n, 1);
		double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
		struct sl_adamw_step s = {(float)(1 - lr * wd), (float)b1, (float)(1 - b1), (float)b2,
					  (float)(1 - b2), (float)eps, (float)clip,
					  (float)(lr / bc1), (float)sqrt(bc2)};
		sl_adamw_update(p, g, m, v, n, &s);
		for (long i = 0; i < n; i++) {
			double gi = g[i] * clip;
			pd[i] *= 1 - lr * wd;
			md[i] = b1 * md[i] + (1 - b1) * gi;
			vd[i] = b2 * vd[i] + (1 - b2) * gi * gi;
			pd[i] -= lr / bc1 * md[i] / (sqrt(vd[i]) / sqrt(bc2) + eps);
		}
		free(g);
	}
	assert_true(rel_err_fd(p, pd, (size_t)n) < 1e-6);
	assert_true(rel_err_fd(m, md, (size_t)n) < 1e-6);
	assert_true(rel_err_fd(v, vd, (size_t)n) < 1e-6);
	double sq = 0;
	for (long i = 0; i < n; i++)
		sq += (double)p[i] * p[i];
	assert_true(fabs(sl_sum_squares(p, n) - sq) < 1e-9 * sq);
	assert_true(sl_sum_squares(p, 0) == 0.0 && sl_sum_squares(p, 3) > 0.0);
	free(p), free(m), free(v), free(pd), free(md), free(vd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(vexp_and_gelu_are_accurate),
		cmocka_unit_test(matmul_matches_naive),
		cmocka_unit_test(threaded_sgemm_matches_serial),
		cmocka_unit_test(layernorm_matches_reference),
		cmocka_unit_test(gelu_matches_reference),
		cmocka_unit_test(attention_matches_reference),
		cmocka_unit_test(embedding_matches_naive),
		cmocka_unit_test(crossentropy_matches_reference),
		cmocka_unit_test(adamw_matches_formula),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
