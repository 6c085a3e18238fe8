/* fa_bench/plugin.h: the plain-C ABI through which a shared library adds kernel paths to fa-bench.
 * A plugin exports one function, fa_bench_plugin(), returning a static table of paths; fa-bench
 * allocates, seeds, poisons, validates and times each path exactly as it does its own. Build:
 * find_package(fa_bench) + target_link_libraries(my_plugin PRIVATE fa_bench::plugin); run:
 * `fa-bench sweep sweeps/edge.csv --plugin ./libmy_plugin.so`. Any language with a C FFI works. */
#ifndef FA_BENCH_PLUGIN_H
#define FA_BENCH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes. fa-bench refuses (exit 2, naming the file) a table whose
 * abi_version differs. Additions that keep old plugins working grow the structs at their end
 * (each carries struct_size) and keep this number; anything else bumps it. */
#define FA_PLUGIN_ABI_VERSION 1u

/* The one symbol fa-bench looks up (dlsym) in a plugin library. */
#define FA_PLUGIN_ENTRY_SYMBOL "fa_bench_plugin"

/* Marks the entry function exported from a library built with -fvisibility=hidden. */
#if defined(_WIN32)
#define FA_PLUGIN_EXPORT __declspec(dllexport)
#else
#define FA_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Element type of Q, K, V and O (LSE is always fp32). Values match nothing else: switch on them. */
typedef enum fa_dtype {
  FA_DTYPE_FP16 = 0, /* IEEE binary16, stored as uint16_t bits */
  FA_DTYPE_BF16 = 1, /* bfloat16, stored as uint16_t bits (the top half of an fp32) */
  FA_DTYPE_FP32 = 2  /* IEEE binary32 */
} fa_dtype;

/* The sweep row's layout. Index with the strides below and both work without looking at this. */
typedef enum fa_layout {
  FA_LAYOUT_BSHD = 0, /* [batch][seq][head][dim]: aiter, flash-attention, FlyDSL (the default) */
  FA_LAYOUT_BHSD = 1  /* [batch][head][seq][dim] */
} fa_layout;

/* Where a path's buffers live. */
typedef enum fa_plugin_kind {
  FA_PLUGIN_CPU = 0, /* host pointers; run() executes on the calling thread (it may spawn its own) */
  FA_PLUGIN_GPU = 1  /* device pointers of the runtime fa-bench was built with (CUDA or HIP); run()
                        enqueues on `stream` and need not synchronise: fa-bench does */
} fa_plugin_kind;

/* What run() and prepare() return. */
typedef enum fa_status {
  FA_STATUS_OK = 0,   /* done; the output is then validated like any path's (ok is not a pass) */
  FA_STATUS_ERROR = 1 /* failed; the record is an `error` with the message written */
} fa_status;

/* Path flags (fa_plugin_path.flags), or-ed. */
#define FA_PATH_SPLITS 1u           /* run() honours problem->G > 0 (KV splits); without it G>0 rows skip */
#define FA_PATH_NONDETERMINISTIC 2u /* same inputs may give different bits (atomics): the timed-launch
                                       check then compares through the pass rule, not bit for bit */

/* Strides of a 4-D tensor over (batch, seq, head, dim), in elements (not bytes). Element
 * (b, s, h, d) is at ptr[b * batch + s * seq + h * head + d * dim]. */
typedef struct fa_strides {
  int64_t batch, seq, head, dim;
} fa_strides;

/* One attention forward call: every field of a sweep row. Conventions (fixed for every path):
 * causal is bottom-right aligned (query i sees keys j <= i + Sk - S; rows that see no key have
 * O = 0 and LSE = -inf); LSE is the natural log of the softmax denominator of the scaled scores. */
typedef struct fa_problem {
  uint32_t struct_size;   /* sizeof(fa_problem) of the fa-bench that filled it; read fields past
                             it never (a newer plugin on an older fa-bench) */
  const char* name;       /* the sweep row's label ("" when none); for logs only */
  int64_t B;              /* batch */
  int64_t H;              /* query heads */
  int64_t Hk;             /* key/value heads; H % Hk == 0 (MHA, GQA, MQA): query head h reads kv head h / (H/Hk) */
  int64_t S;              /* query length */
  int64_t Sk;             /* key length (kv_cache: the whole cache after the append) */
  int64_t D;              /* head dimension of Q, K, V and O */
  int32_t causal;         /* 1: bottom-right causal mask; 0: none */
  int32_t dtype;          /* an fa_dtype */
  int32_t layout;         /* an fa_layout (the strides already say it) */
  int32_t kv_cache;       /* 1: append the S new tokens (buffers->k_new/v_new) into K/V at
                             [kv_cache_offset, Sk), then attend over all Sk keys */
  int64_t kv_cache_offset;/* first appended slot: Sk - S when kv_cache, else Sk */
  double scale;           /* softmax scale, resolved: the row's, else 1/sqrt(D); never 0 */
  uint64_t seed;          /* the seed the inputs were drawn with (for logs and reproduction) */
  int32_t G;              /* requested KV splits: 0 = none, else 2..16 (only with FA_PATH_SPLITS) */
  int32_t reserved0;      /* 0; keeps the strides 8-byte aligned */
  fa_strides q;           /* Q: [B, S, H, D] logically */
  fa_strides k;           /* K: [B, Sk, Hk, D] */
  fa_strides v;           /* V: [B, Sk, Hk, D] */
  fa_strides o;           /* O: [B, S, H, D], same layout as Q */
  fa_strides kv_new;      /* k_new/v_new (kv_cache only): [B, S, Hk, D] compact BSHD */
  /* LSE is [B][H][S] contiguous fp32 in every layout: lse[(b * H + h) * S + s]. */
} fa_problem;

/* What the gates may ask about the machine. */
typedef struct fa_device {
  uint32_t struct_size;   /* sizeof(fa_device) of the fa-bench that filled it */
  int32_t gpu;            /* 1: a GPU backend is built in and a device answered */
  const char* backend;    /* "cuda", "hip" or "none": the runtime GPU pointers belong to */
  const char* name;       /* device name ("" without a GPU) */
  const char* arch;       /* "sm_90", "gfx942", ... ("" without a GPU) */
  int32_t units;          /* SMs / CUs (0 without a GPU) */
  int32_t wave_size;      /* 32 or 64 */
  int32_t cpu_threads;    /* OpenMP threads fa-bench's own CPU paths use */
  int32_t reserved0;      /* 0 */
  uint64_t memory_bytes;  /* device memory (0 without a GPU) */
} fa_device;

/* The buffers of one run, allocated by fa-bench (host memory for FA_PLUGIN_CPU, device memory for
 * FA_PLUGIN_GPU). O and LSE hold the poison pattern (all-ones bits) before every run: an element
 * left unwritten fails validation. Guard bytes sit before and after O, LSE and the workspace: a
 * write outside them fails the record ("wrote past O's end", "wrote before O"). Q, K, V and the
 * new tokens are checksummed around each call: a write into them fails the record ("the path wrote
 * its inputs (Q, element N)"); only a kv_cache's slots [kv_cache_offset, Sk) of K and V are the
 * path's to write. */
typedef struct fa_buffers {
  uint32_t struct_size;   /* sizeof(fa_buffers) of the fa-bench that filled it */
  uint32_t reserved0;     /* 0 */
  const void* q;          /* Q in the problem's dtype, strides problem->q */
  void* k;                /* K (strides problem->k); writable only for kv_cache, whose new slots
                             [kv_cache_offset, Sk) hold the poison pattern until run() appends */
  void* v;                /* V, as K */
  void* o;                /* O, output, dtype, strides problem->o */
  float* lse;             /* LSE, output, [B][H][S] fp32 */
  const void* k_new;      /* kv_cache: the S new keys, strides problem->kv_new; else NULL */
  const void* v_new;      /* kv_cache: the S new values; else NULL */
  void* workspace;        /* workspace_bytes asked for by prepare(), NULL when 0; its contents are
                             not cleared between runs */
  uint64_t workspace_bytes;
} fa_buffers;

/* One path. Every function pointer but prepare/release is required. Functions are called from
 * one thread at a time per path. Strings the plugin returns stay valid until the library unloads
 * (or, for supports(), until the next call on the same thread). */
typedef struct fa_plugin_path {
  uint32_t struct_size;   /* sizeof(fa_plugin_path) of the header the plugin was built with */
  uint32_t flags;         /* FA_PATH_* or-ed */
  const char* name;       /* unique path name: [a-z0-9-]+, not a built-in's (`fa-bench list`) */
  const char* summary;    /* one line: what it is, shown by `fa-bench list` */
  int32_t kind;           /* an fa_plugin_kind */
  int32_t reserved0;      /* 0 */
  /* NULL when the path runs this problem on this device; otherwise the reason it does not,
   * recorded as a `skip` with that reason. Never runs the kernel. */
  const char* (*supports)(const fa_problem* problem, const fa_device* device);
  /* Optional (NULL: no plan, no workspace). Called once per record before the first run(): builds
   * a plan (*plan, passed back to run() and release()) and asks for *workspace_bytes of scratch
   * memory (fa-bench allocates it, with guard bytes around it; more than the host's or device's
   * memory is an `oom` record). Returns FA_STATUS_OK or
   * FA_STATUS_ERROR with a message written to message[0..message_size). */
  int32_t (*prepare)(const fa_problem* problem, const fa_device* device, void** plan, uint64_t* workspace_bytes,
                     char* message, uint32_t message_size);
  /* Optional: frees what prepare() made. Called once per record after the last run(). */
  void (*release)(void* plan);
  /* One forward call: reads Q, K, V (and k_new, v_new), writes O and LSE (and the cache's new
   * slots). `stream` is the cudaStream_t / hipStream_t to enqueue on (FA_PLUGIN_GPU; NULL: the
   * default stream) and NULL for FA_PLUGIN_CPU. Called many times per record (validation, warm-up,
   * timed samples): it must not carry state from one call to the next. Returns FA_STATUS_OK, or
   * FA_STATUS_ERROR with a message written to message[0..message_size). */
  int32_t (*run)(void* plan, const fa_problem* problem, const fa_buffers* buffers, void* stream, char* message,
                 uint32_t message_size);
} fa_plugin_path;

/* The table the entry function returns; static, valid until the library unloads. */
typedef struct fa_plugin {
  uint32_t struct_size;         /* sizeof(fa_plugin) of the header the plugin was built with */
  uint32_t abi_version;         /* FA_PLUGIN_ABI_VERSION the plugin was built with */
  const char* version;          /* the plugin's own version, e.g. "1.2.0+gabc123": recorded in every
                                   result (column plugin_version) so two builds can be told apart */
  uint32_t path_count;          /* entries in paths */
  uint32_t reserved0;           /* 0 */
  const fa_plugin_path* paths;  /* path_count paths */
} fa_plugin;

/* The entry function every plugin defines, exported as FA_PLUGIN_ENTRY_SYMBOL. fa-bench passes
 * the ABI version it speaks; a plugin that can serve several returns the matching table, else its
 * own (and fa-bench refuses a mismatch). NULL: the plugin refuses to load (an input error). */
typedef const fa_plugin* (*fa_plugin_entry_fn)(uint32_t host_abi_version);
FA_PLUGIN_EXPORT const fa_plugin* fa_bench_plugin(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* FA_BENCH_PLUGIN_H */
