/* Test plugins, one library per PLANT_* definition (tests/CMakeLists.txt), each a path that
 * misbehaves in one way fa-bench must contain. The kernel is examples/plugins/cpu's (correct);
 * each plant spoils it:
 *   PLANT_WRONG    O scaled by 1.05 after a correct run: status ok, output wrong (must fail)
 *   PLANT_CRASH    SIGSEGV inside run() (an `error` under --isolate)
 *   PLANT_OVERRUN  writes 8 elements past O's end (fails with "wrote past O's end")
 *   PLANT_ERROR    returns FA_STATUS_ERROR with a message (an `error` record)
 *   PLANT_ABI      declares ABI version FA_PLUGIN_ABI_VERSION + 1 (exit 2)
 *   PLANT_CLASH    names its path cpu-flash, a built-in (exit 2)
 *   PLANT_NO_ENTRY exports no fa_bench_plugin (exit 2)                                          */
#define FA_EXAMPLE_KERNEL_ONLY
#include "fa_example_cpu.c"

#include <signal.h>

static const char* planted_supports(const fa_problem* p, const fa_device* d) {
  (void)d;
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
  fa_example_attention(p, buf);
#ifdef PLANT_WRONG
  for (i = 0; i < n; ++i) store(buf->o, i, p->dtype, 1.05f * load(buf->o, i, p->dtype));
#endif
#ifdef PLANT_OVERRUN
  for (i = n; i < n + 8; ++i) store(buf->o, i, p->dtype, 1.0f);
#endif
  return FA_STATUS_OK;
}

static int32_t planted_prepare(const fa_problem* p, const fa_device* d, void** plan, uint64_t* workspace_bytes,
                               char* message, uint32_t message_size) {
  return example_prepare(p, d, plan, workspace_bytes, message, message_size);
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
