/* example-cpu: a complete fa-bench plugin in plain C. Scalar loops, fp32 math: a KV head's K and V
 * converted to fp32 once into the workspace fa-bench allocates (as a kernel stages its tiles), then
 * one pass per query row of that head's group (scores, softmax, PV), O rounded once to the dtype
 * (round to nearest even), LSE in natural log. Handles every row of sweeps/edge.csv and whisper.csv:
 * fp16/bf16/fp32, bshd/bhsd (by strides), GQA/MQA, bottom-right causal, S > Sk, kv-cache append.
 *   cmake -S examples/plugins/cpu -B build/example-cpu -DCMAKE_PREFIX_PATH=<fa-bench prefix>
 *   cmake --build build/example-cpu && fa-bench sweep sweeps/edge.csv --plugin build/example-cpu/libfa_example_cpu.so */
#include <fa_bench/plugin.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- storage <-> float (what a GPU kernel's conversion intrinsics do) ---- */

static float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t x;
  float f;
  if (e == 0) { /* zero or subnormal: m * 2^-24 */
    f = (float)m * (1.0f / 16777216.0f);
    return sign ? -f : f;
  }
  x = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112u) << 23) | (m << 13));
  memcpy(&f, &x, 4);
  return f;
}

static uint16_t float_to_half(float f) { /* round to nearest even */
  uint32_t x, absx, sign, h, rem;
  float a;
  memcpy(&x, &f, 4);
  sign = (x >> 16) & 0x8000u;
  absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return (uint16_t)(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
  if (absx < 0x38800000u) {                                  /* below 2^-14: a subnormal half */
    memcpy(&a, &absx, 4);
    return (uint16_t)(sign | (uint32_t)rintf(a * 16777216.0f));
  }
  h = ((((absx >> 23) - 112u) << 10) | ((absx & 0x7fffffu) >> 13));
  rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h; /* a carry into the exponent is right */
  return (uint16_t)(sign | h);
}

static float bf16_to_float(uint16_t b) {
  const uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static float load(const void* p, int64_t i, int32_t dtype) {
  if (dtype == FA_DTYPE_FP32) return ((const float*)p)[i];
  return dtype == FA_DTYPE_FP16 ? half_to_float(((const uint16_t*)p)[i]) : bf16_to_float(((const uint16_t*)p)[i]);
}

static void store(void* p, int64_t i, int32_t dtype, float x) {
  if (dtype == FA_DTYPE_FP32) ((float*)p)[i] = x;
  else ((uint16_t*)p)[i] = dtype == FA_DTYPE_FP16 ? float_to_half(x) : float_to_bf16(x);
}

static int64_t at(const fa_strides* s, int64_t b, int64_t t, int64_t h) { return b * s->batch + t * s->seq + h * s->head; }

/* ---- the path ---- */

static const char* example_supports(const fa_problem* p, const fa_device* d) {
  (void)p;
  (void)d;
  return NULL; /* every problem: plain loops have no tile or head-dim limits */
}

/* Workspace: one KV head's K and V in fp32 (Sk x D each), then a query row's D values, Sk scores
 * and D accumulators. */
static uint64_t example_workspace_bytes(const fa_problem* p) {
  return (uint64_t)(2 * p->Sk * p->D + p->Sk + 2 * p->D) * sizeof(float);
}

static int32_t example_prepare(const fa_problem* p, const fa_device* d, void** plan, uint64_t* workspace_bytes,
                               char* message, uint32_t message_size) {
  (void)d;
  (void)message;
  (void)message_size;
  *plan = NULL;
  *workspace_bytes = example_workspace_bytes(p);
  return FA_STATUS_OK;
}

int32_t fa_example_attention(const fa_problem* p, const fa_buffers* buf) {
  float* kf = (float*)buf->workspace; /* K[j][x] of the KV head at hand, then V, then one query row's */
  float* vf = kf + p->Sk * p->D;
  float* qf = vf + p->Sk * p->D;
  float* score = qf + p->D;
  float* acc = score + p->Sk;
  const int64_t group = p->H / p->Hk;
  int64_t b, kh, g, s, j, x;
  if (p->kv_cache) /* append the S new tokens at [kv_cache_offset, Sk) of the cache */
    for (b = 0; b < p->B; ++b)
      for (j = 0; j < p->S; ++j)
        for (kh = 0; kh < p->Hk; ++kh)
          for (x = 0; x < p->D; ++x) {
            const int64_t from = at(&p->kv_new, b, j, kh) + x;
            store(buf->k, at(&p->k, b, p->kv_cache_offset + j, kh) + x, p->dtype, load(buf->k_new, from, p->dtype));
            store(buf->v, at(&p->v, b, p->kv_cache_offset + j, kh) + x, p->dtype, load(buf->v_new, from, p->dtype));
          }
  for (b = 0; b < p->B; ++b)
    for (kh = 0; kh < p->Hk; ++kh) {
      for (j = 0; j < p->Sk; ++j) /* this KV head in fp32: each key is read by S x group query rows */
        for (x = 0; x < p->D; ++x) {
          kf[j * p->D + x] = load(buf->k, at(&p->k, b, j, kh) + x, p->dtype);
          vf[j * p->D + x] = load(buf->v, at(&p->v, b, j, kh) + x, p->dtype);
        }
      for (g = 0; g < group; ++g)
        for (s = 0; s < p->S; ++s) {
          const int64_t h = kh * group + g, q0 = at(&p->q, b, s, h), o0 = at(&p->o, b, s, h);
          const int64_t visible = p->causal ? s + (p->Sk - p->S) + 1 : p->Sk; /* bottom-right causal */
          const int64_t n = visible < 0 ? 0 : visible > p->Sk ? p->Sk : visible;
          float mx = -INFINITY, sum = 0.0f;
          float* lse = &buf->lse[(b * p->H + h) * p->S + s];
          if (n == 0) { /* a row that sees no key: O = 0, LSE = -inf */
            for (x = 0; x < p->D; ++x) store(buf->o, o0 + x, p->dtype, 0.0f);
            *lse = -INFINITY;
            continue;
          }
          for (x = 0; x < p->D; ++x) qf[x] = load(buf->q, q0 + x, p->dtype);
          for (j = 0; j < n; ++j) {
            const float* k = kf + j * p->D;
            float dot = 0.0f;
            for (x = 0; x < p->D; ++x) dot += qf[x] * k[x];
            score[j] = dot * (float)p->scale;
            if (score[j] > mx) mx = score[j];
          }
          for (x = 0; x < p->D; ++x) acc[x] = 0.0f;
          for (j = 0; j < n; ++j) {
            const float* v = vf + j * p->D;
            const float w = expf(score[j] - mx);
            sum += w;
            for (x = 0; x < p->D; ++x) acc[x] += w * v[x];
          }
          for (x = 0; x < p->D; ++x) store(buf->o, o0 + x, p->dtype, acc[x] / sum);
          *lse = mx + logf(sum);
        }
    }
  return FA_STATUS_OK;
}

static int32_t example_run(void* plan, const fa_problem* p, const fa_buffers* buf, void* stream, char* message,
                           uint32_t message_size) {
  (void)plan;
  (void)stream;
  if (!buf->workspace || buf->workspace_bytes < example_workspace_bytes(p)) {
    snprintf(message, message_size, "workspace of %llu bytes, need %llu", (unsigned long long)buf->workspace_bytes,
             (unsigned long long)example_workspace_bytes(p));
    return FA_STATUS_ERROR;
  }
  return fa_example_attention(p, buf);
}

#ifndef FA_EXAMPLE_KERNEL_ONLY /* tests/plugins/ reuse the kernel above under their own tables */
static const fa_plugin_path example_paths[] = {{
    sizeof(fa_plugin_path), 0, "example-cpu", "example plugin: scalar C loops, fp32 math (examples/plugins/cpu)",
    FA_PLUGIN_CPU, 0, example_supports, example_prepare, NULL, example_run,
}};

static const fa_plugin example_plugin = {sizeof(fa_plugin), FA_PLUGIN_ABI_VERSION, "1.0.0", 1, 0, example_paths};

FA_PLUGIN_EXPORT const fa_plugin* fa_bench_plugin(uint32_t host_abi_version) {
  (void)host_abi_version; /* this plugin speaks version 1 only; fa-bench refuses a mismatch */
  return &example_plugin;
}
#endif
