/* Test plugins, one library per PLANT_* definition (tests/CMakeLists.txt), each a path that
 * misbehaves in one way fa-bench must contain. The kernel is examples/plugins/cpu's (correct);
 * each plant spoils it:
 *   PLANT_WRONG    O scaled by 1.05 after a correct run: status ok, output wrong (must fail)
 *   PLANT_CRASH    SIGSEGV inside run() (an `error` under --isolate)
 *   PLANT_OVERRUN  writes 8 elements past O's end (fails with "wrote past O's end")
 *   PLANT_ERROR    returns FA_STATUS_ERROR with a message (an `error` record)
 *   PLANT_ABI      declares ABI version FA_PLUGIN_ABI_VERSION + 1 (exit 2)
 *   PLANT_CLASH    names its path cpu-flash, a built-in (exit 2)
 *   PLANT_NO_ENTRY exports no fa_bench_plugin (exit 2)
 *   PLANT_NONE     spoils nothing (passes; the colon-in-its-path test copies it)
 *   PLANT_WRITE_Q, _K, _V  flips a bit of an input after a correct run: element PLANT_ELEMENT
 *                  (first | middle | last, from the environment; first by default) (must fail)
 *   PLANT_BEFORE_O writes 8 bytes before O (fails with "wrote before O", never aborts the run)
 *   PLANT_HUGE_WS  prepare() asks for 2^64 - 16 workspace bytes (`oom` naming the size)
 *   PLANT_SUPPORTS_CRASH  SIGSEGV inside supports() (an `error` under --isolate, not a dead parent)
 *   PLANT_EXIT0    exit(0) inside run() (an `error` under --isolate naming the exit status)
 *   PLANT_STATUS7  run() returns 7, no fa_status (an `error` whose reason says so)
 *   PLANT_HANG     writes its pid to $PLANT_PID_FILE and sleeps in run() (the parent-death test)
 * PLANT_FROM_CALL=N (environment) holds the input writes and the write before O back until the Nth
 * run() (1 by default): N = 2 spoils only what timed launches leave. */
#define FA_EXAMPLE_KERNEL_ONLY
#include "fa_example_cpu.c"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Flips the lowest bit of element PLANT_ELEMENT of an n-element tensor of the problem's dtype, once
 * a process: flipping at every call would undo itself after an even number of timed launches. */
static void flip_input(const void* tensor, int64_t n, int32_t dtype) {
  static int flipped = 0;
  const char* which = getenv("PLANT_ELEMENT");
  if (flipped) return;
  flipped = 1;
  const int64_t i = !which || !strcmp(which, "first") ? 0 : !strcmp(which, "middle") ? n / 2 : n - 1;
  const int64_t bytes = dtype == FA_DTYPE_FP32 ? 4 : 2;
  ((uint8_t*)tensor)[i * bytes] ^= 1u;
}

/* Whether this run() is one the plant spoils (PLANT_FROM_CALL above). */
static int planted_now(void) {
  static int calls = 0;
  const char* from = getenv("PLANT_FROM_CALL");
  return ++calls >= (from ? atoi(from) : 1);
}

static const char* planted_supports(const fa_problem* p, const fa_device* d) {
  (void)d;
#ifdef PLANT_SUPPORTS_CRASH
  signal(SIGSEGV, SIG_DFL);
  raise(SIGSEGV);
#endif
  return p->kv_cache ? "planted plugins skip kv-cache rows" : NULL;
}

static int32_t planted_run(void* plan, const fa_problem* p, const fa_buffers* buf, void* stream, char* message,
                           uint32_t message_size) {
  const int64_t n = p->B * p->S * p->H * p->D;
  int64_t i;
  (void)plan;
  (void)stream;
  (void)message;
  (void)message_size;
  (void)n;
  (void)i;
#ifdef PLANT_CRASH
  signal(SIGSEGV, SIG_DFL); /* die as a faulting kernel does, also under ASan's handler */
  raise(SIGSEGV);
#endif
#ifdef PLANT_ERROR
  snprintf(message, message_size, "planted failure: the plan was lost");
  return FA_STATUS_ERROR;
#endif
#ifdef PLANT_EXIT0
  fprintf(stderr, "planted: leaving from inside run()\n");
  exit(0);
#endif
#ifdef PLANT_HANG
  {
    const char* file = getenv("PLANT_PID_FILE");
    FILE* f = file ? fopen(file, "w") : NULL;
    if (f) fprintf(f, "%d\n", (int)getpid()), fclose(f);
    for (;;) pause();
  }
#endif
  fa_example_attention(p, buf);
  if (!planted_now()) return FA_STATUS_OK;
#ifdef PLANT_WRONG
  for (i = 0; i < n; ++i) store(buf->o, i, p->dtype, 1.05f * load(buf->o, i, p->dtype));
#endif
#ifdef PLANT_OVERRUN
  for (i = n; i < n + 8; ++i) store(buf->o, i, p->dtype, 1.0f);
#endif
#ifdef PLANT_WRITE_Q
  flip_input(buf->q, n, p->dtype);
#endif
#ifdef PLANT_WRITE_K
  flip_input(buf->k, p->B * p->Sk * p->Hk * p->D, p->dtype);
#endif
#ifdef PLANT_WRITE_V
  flip_input(buf->v, p->B * p->Sk * p->Hk * p->D, p->dtype);
#endif
#ifdef PLANT_BEFORE_O
  memset((uint8_t*)buf->o - 8, 0x5a, 8);
#endif
#ifdef PLANT_STATUS7
  return 7;
#endif
  return FA_STATUS_OK;
}

static int32_t planted_prepare(const fa_problem* p, const fa_device* d, void** plan, uint64_t* workspace_bytes,
                               char* message, uint32_t message_size) {
#ifdef PLANT_HUGE_WS
  (void)p, (void)d, (void)plan, (void)message, (void)message_size;
  *workspace_bytes = UINT64_MAX - 15u;
  return FA_STATUS_OK;
#else
  return example_prepare(p, d, plan, workspace_bytes, message, message_size);
#endif
}

#ifdef PLANT_CLASH
#define PLANTED_NAME "cpu-flash"
#else
#define PLANTED_NAME PLANTED_PATH
#endif
#ifdef PLANT_ABI
#define PLANTED_ABI (FA_PLUGIN_ABI_VERSION + 1u)
#else
#define PLANTED_ABI FA_PLUGIN_ABI_VERSION
#endif

static const fa_plugin_path planted_paths[] = {{
    sizeof(fa_plugin_path), 0, PLANTED_NAME, "test plugin: " PLANTED_PATH, FA_PLUGIN_CPU, 0, planted_supports,
    planted_prepare, NULL, planted_run,
}};

static const fa_plugin planted_plugin = {sizeof(fa_plugin), PLANTED_ABI, "0.0-" PLANTED_PATH, 1, 0, planted_paths};

#ifdef PLANT_NO_ENTRY
FA_PLUGIN_EXPORT const fa_plugin* fa_bench_plugin_misspelt(uint32_t host_abi_version) {
#else
FA_PLUGIN_EXPORT const fa_plugin* fa_bench_plugin(uint32_t host_abi_version) {
#endif
  (void)host_abi_version;
  return &planted_plugin;
}
