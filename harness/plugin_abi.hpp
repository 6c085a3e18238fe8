// The plugin ABI (include/fa_bench/plugin.h) as the harness fills it: a Problem and G as an
// fa_problem (strides in elements, the scale resolved), DeviceFacts as an fa_device, and the guard
// bytes fa-bench puts before and after a plugin's O, LSE and workspace: a fixed byte pattern checked
// when the outputs are read back, so a write outside an output fails the record with a reason naming it.
#pragma once
#include <fa_bench/plugin.h>

#include <cstdint>
#include <string>

#include "harness/path.hpp"

namespace fa {

// One path of a loaded plugin: the table entry and where it came from.
struct PluginPathRef {
  std::string file;     // the library as given (--plugin / FABENCH_PLUGINS), made absolute
  std::string version;  // fa_plugin::version
  const fa_plugin_path* path = nullptr;
};

fa_problem plugin_problem(const Problem& p, int G);
// Strings point into `d`: keep it alive while the fa_device is used.
fa_device plugin_device(const DeviceFacts& d);

// 4 KiB: a loop that runs a tile past the end (64 rows x 64 dims of fp16 is 8 KiB) lands in the
// guard's first bytes; larger strays reach memory the allocator or the device can fault on.
constexpr size_t kGuardBytes = 4096;
constexpr uint8_t kGuardByte = 0xA5;  // not 0x00 or 0xff: neither zero-fill nor the poison pattern

// "" when guard[0..n) still holds kGuardByte; otherwise "wrote past <what>'s end (N of the G guard
// bytes after it changed, the first at +K)".
std::string guard_breach(const std::string& what, const uint8_t* guard, size_t n);
// The same for the guard in front of a buffer: "wrote before <what> (N of the G guard bytes before
// it changed, the nearest at -K)".
std::string guard_breach_before(const std::string& what, const uint8_t* guard, size_t n);

// The message a plugin wrote into its buffer, made safe: cut at the buffer's end, NUL or not.
std::string plugin_message(const char* buf, size_t size);
// Why run() or prepare() did not return FA_STATUS_OK: the message written with FA_STATUS_ERROR
// (or that it is empty), else "returned 7, which is no fa_status (...)".
std::string plugin_status_reason(int32_t status, const char* buf, size_t size);

// A plugin's call in flight (supports, prepare, run), for the process's exit handler: a plugin that
// calls exit() runs fa-bench's atexit handlers, and without --isolate that ended the sweep with
// status 0 and the record missing. While a PluginCall lives, exit() instead prints which path and
// call exited and ends the process with status 3 (records already written stay; this one is lost:
// --isolate records it as an `error`). Calls do not nest; one thread makes them.
class PluginCall {
 public:
  PluginCall(const char* path, const char* call);
  ~PluginCall();
  PluginCall(const PluginCall&) = delete;
  PluginCall& operator=(const PluginCall&) = delete;
};
constexpr int kPluginExitStatus = 3;

}  // namespace fa
