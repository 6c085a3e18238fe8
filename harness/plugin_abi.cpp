// Filling the plugin ABI's structs from the harness's types, and the guard-byte check.
#include "harness/plugin_abi.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fa {
namespace {

fa_strides abi_strides(const Strides& s) { return fa_strides{s.batch, s.seq, s.head, 1}; }

}  // namespace

fa_problem plugin_problem(const Problem& p, int G) {
  fa_problem f;
  std::memset(&f, 0, sizeof f);
  f.struct_size = sizeof(fa_problem);
  f.name = p.name.c_str();
  f.B = p.B, f.H = p.H, f.Hk = p.Hk, f.S = p.S, f.Sk = p.Sk, f.D = p.D;
  f.causal = p.causal ? 1 : 0;
  f.dtype = p.dtype == DType::fp16 ? FA_DTYPE_FP16 : p.dtype == DType::bf16 ? FA_DTYPE_BF16 : FA_DTYPE_FP32;
  f.layout = p.layout == Layout::bshd ? FA_LAYOUT_BSHD : FA_LAYOUT_BHSD;
  f.kv_cache = p.kv_cache ? 1 : 0;
  f.kv_cache_offset = p.kv_cache_offset();
  f.scale = p.softmax_scale();
  f.seed = p.seed;
  f.G = G;
  f.q = f.o = abi_strides(q_strides(p));
  f.k = f.v = abi_strides(kv_strides(p));
  f.kv_new = abi_strides(strides_for(Layout::bshd, p.S, p.Hk, p.D));  // the appended tokens, compact
  return f;
}

fa_device plugin_device(const DeviceFacts& d) {
  fa_device f;
  std::memset(&f, 0, sizeof f);
  f.struct_size = sizeof(fa_device);
  f.gpu = d.gpu ? 1 : 0;
  f.backend = FABENCH_BACKEND;
  f.name = d.name.c_str();
  f.arch = d.arch.c_str();
  f.units = d.units;
  f.wave_size = d.wave_size;
  f.cpu_threads = d.cpu_threads;
  f.memory_bytes = d.memory_bytes;
  return f;
}

std::string guard_breach(const std::string& what, const uint8_t* guard, size_t n) {
  size_t changed = 0, first = 0;
  for (size_t i = 0; i < n; ++i)
    if (guard[i] != kGuardByte && changed++ == 0) first = i;
  if (!changed) return "";
  return fmt::format("wrote past {}'s end ({} of the {} guard bytes after it changed, the first at +{})", what, changed,
                     n, first);
}

std::string guard_breach_before(const std::string& what, const uint8_t* guard, size_t n) {
  size_t changed = 0, last = 0;
  for (size_t i = 0; i < n; ++i)
    if (guard[i] != kGuardByte) ++changed, last = i;
  if (!changed) return "";
  return fmt::format("wrote before {} ({} of the {} guard bytes before it changed, the nearest at -{})", what, changed,
                     n, n - last);
}

std::string plugin_message(const char* buf, size_t size) { return std::string(buf, strnlen(buf, size)); }

std::string plugin_status_reason(int32_t status, const char* buf, size_t size) {
  if (status != FA_STATUS_ERROR)
    return fmt::format("returned {}, which is no fa_status (FA_STATUS_OK is 0, FA_STATUS_ERROR 1)", status);
  const std::string m = plugin_message(buf, size);
  return m.empty() ? "FA_STATUS_ERROR with an empty message" : m;
}

namespace {

// The call in flight, read by the atexit handler (plain pointers: an exit handler may run while
// anything else is half done).
const char* g_call_path = nullptr;
const char* g_call_name = nullptr;

void exit_inside_a_plugin_call() {
  if (!g_call_path) return;
  std::fprintf(stderr,
               "[error] plugin path %s called exit() inside %s(): fa-bench stops with status 3, this record "
               "unwritten and those before it kept (under --isolate the parent records it as an error)\n",
               g_call_path, g_call_name);
  std::fflush(stderr);
  std::_Exit(kPluginExitStatus);
}

}  // namespace

PluginCall::PluginCall(const char* path, const char* call) {
  static const bool registered = std::atexit(exit_inside_a_plugin_call) == 0;
  (void)registered;
  g_call_path = path, g_call_name = call;
}
PluginCall::~PluginCall() { g_call_path = g_call_name = nullptr; }

}  // namespace fa
