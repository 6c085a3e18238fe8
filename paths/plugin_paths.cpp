// dlopen/dlsym of plugin libraries, the checks on their tables, and their rows. Libraries stay
// loaded until exit (rows hold their function pointers); a file loaded twice in one process (a
// registry built per device, or for list and then a run) is opened once.
#include "paths/plugin_paths.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <sstream>

#include "harness/plugin_abi.hpp"
#include "harness/sweep/sweep.hpp"
#include "paths/builtin.hpp"
#include "paths/plugin_cpu.hpp"
#ifdef FABENCH_HAS_GPU
#include "kernels/runtime/plugin_gpu.hpp"
#endif

namespace fa {
namespace {

InputError plugin_error(const std::string& file, const std::string& why) {
  return InputError(SourceLoc{file, 0}, "--plugin", why);
}

std::string absolute(const std::string& file) {
  char buf[PATH_MAX];
  if (!realpath(file.c_str(), buf)) throw plugin_error(file, "no such file (or not readable)");
  return buf;
}

// The file's table, checked; the library stays loaded.
const fa_plugin* load_table(const std::string& file) {
  static std::map<std::string, const fa_plugin*> loaded;
  if (auto it = loaded.find(file); it != loaded.end()) return it->second;
  void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw plugin_error(file, fmt::format("the library does not load: {}", dlerror()));
  void* sym = dlsym(lib, FA_PLUGIN_ENTRY_SYMBOL);
  if (!sym)
    throw plugin_error(file, fmt::format("no entry symbol '{}' (export it with FA_PLUGIN_EXPORT from "
                                         "<fa_bench/plugin.h>; a C++ file needs extern \"C\")",
                                         FA_PLUGIN_ENTRY_SYMBOL));
  const fa_plugin* t = reinterpret_cast<fa_plugin_entry_fn>(sym)(FA_PLUGIN_ABI_VERSION);
  if (!t) throw plugin_error(file, fmt::format("{}() returned NULL: the plugin refused to load", FA_PLUGIN_ENTRY_SYMBOL));
  if (t->abi_version != FA_PLUGIN_ABI_VERSION)
    throw plugin_error(file, fmt::format("declares plugin ABI version {}, and this fa-bench speaks version {} "
                                         "(rebuild the plugin against this fa-bench's <fa_bench/plugin.h>)",
                                         t->abi_version, FA_PLUGIN_ABI_VERSION));
  if (t->struct_size < sizeof(fa_plugin))
    throw plugin_error(file, fmt::format("its fa_plugin table is {} bytes, less than version {}'s {}", t->struct_size,
                                         FA_PLUGIN_ABI_VERSION, sizeof(fa_plugin)));
  if (t->path_count && !t->paths) throw plugin_error(file, "path_count is not 0 but paths is NULL");
  for (uint32_t i = 0; i < t->path_count; ++i) {
    const fa_plugin_path& p = t->paths[i];
    const std::string at = fmt::format("path {}", i);
    if (p.struct_size < sizeof(fa_plugin_path))
      throw plugin_error(file, fmt::format("{}: struct_size {} is less than version {}'s {}", at, p.struct_size,
                                           FA_PLUGIN_ABI_VERSION, sizeof(fa_plugin_path)));
    if (!p.name || !*p.name) throw plugin_error(file, at + ": no name");
    for (const char* c = p.name; *c; ++c)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
        throw plugin_error(file, fmt::format("path '{}': names take a-z, 0-9, '-', '_', '.'", p.name));
    if (!p.run || !p.supports) throw plugin_error(file, fmt::format("path '{}': run and supports are required", p.name));
    if (p.kind != FA_PLUGIN_CPU && p.kind != FA_PLUGIN_GPU)
      throw plugin_error(file, fmt::format("path '{}': kind {} is neither FA_PLUGIN_CPU nor FA_PLUGIN_GPU", p.name, p.kind));
  }
  loaded[file] = t;
  return t;
}

PathRow plugin_row(const PluginPathRef& ref) {
  const fa_plugin_path* pp = ref.path;
  const bool gpu = pp->kind == FA_PLUGIN_GPU;
  PathRow r;
  r.name = pp->name;
  r.kind = gpu ? "gpu" : "cpu";
  r.summary = pp->summary ? pp->summary : "";
  r.gate_doc = "its supports()";
  r.plugin_file = ref.file;
  r.plugin_version = ref.version;
  r.supports = [pp, gpu](const Problem& p, int G, const GateContext& ctx) -> std::optional<std::string> {
    if (G > 0 && !(pp->flags & FA_PATH_SPLITS))
      return fmt::format("G={}: the plugin path does not split (it declares no FA_PATH_SPLITS)", G);
    if (is_fp8(p.dtype))  // fa_problem has no FP8 dtype nor descales: the plugin would read bytes as halves
      return fmt::format("plugin ABI {} has no FP8 dtype (nor descale factors)", FA_PLUGIN_ABI_VERSION);
    if (gpu && p.dtype == DType::fp32)
      return std::string("fa-bench's GPU buffers hold fp16 and bf16 tensors; fp32 runs on CPU plugin paths only");
    // The ABI's problem struct has no lengths, page table, window, ALiBi or softcap yet: a plugin
    // would run a different problem than the record names.
    if (const auto f = p.serving_fields(); !f.empty())
      return serving_refusal(f, fmt::format("plugin ABI {} paths", FA_PLUGIN_ABI_VERSION));
    const fa_problem fp = plugin_problem(p, G);
    const fa_device fd = plugin_device(ctx.device);
    const char* no = nullptr;
    {
      const PluginCall call(pp->name, "supports");
      no = pp->supports(&fp, &fd);
    }
    if (!no) return std::nullopt;
    return *no ? std::string(no) : std::string("its supports() said no (with an empty reason)");
  };
  r.prepare = [ref, gpu](const Problem& p, const HostInputs& in, int G, const GateContext& ctx) -> std::unique_ptr<Execution> {
#ifdef FABENCH_HAS_GPU
    if (gpu) return gpu::make_gpu_plugin_execution(ref, p, in, G, ctx);
#else
    if (gpu) throw std::runtime_error("a GPU plugin path needs a GPU backend (this build: FABENCH_GPU=none)");
#endif
    return make_cpu_plugin_execution(ref, p, in, G, ctx);
  };
  r.auto_rank = 0;  // `auto` dispatches among built-ins only: a plugin is measured, never chosen for
  // Without FA_PATH_SPLITS G=auto runs it at G = 0 (the runner's rule for paths that size their own split).
  if (!(pp->flags & FA_PATH_SPLITS)) r.own_split_rule = "plugin-no-split";
  r.deterministic = !(pp->flags & FA_PATH_NONDETERMINISTIC);
  return r;
}

std::vector<std::string> env_files() {
  std::vector<std::string> out;
  const char* env = std::getenv(kPluginsEnv);
  if (!env) return out;
  std::istringstream in(env);
  for (std::string f; std::getline(in, f, ':');)
    if (!f.empty()) out.push_back(f);
  return out;
}

}  // namespace

std::vector<std::string> plugin_files(const std::vector<std::string>& files) {
  std::vector<std::string> all = files;
  for (const auto& f : env_files()) all.push_back(f);
  return all;
}

void add_plugin_paths(Registry& reg, const std::vector<std::string>& files) {
  std::vector<std::string> all;
  for (const auto& given : files) all.push_back(absolute(given));
  for (const auto& given : env_files()) {
    try {
      all.push_back(absolute(given));
    } catch (const InputError&) {
      throw plugin_error(given, fmt::format("named in {}: no such file (or not readable)", kPluginsEnv));
    }
  }
  std::vector<std::string> unique;
  for (const auto& f : all)
    if (std::find(unique.begin(), unique.end(), f) == unique.end()) unique.push_back(f);
  for (const auto& file : unique) {
    const fa_plugin* t = load_table(file);
    for (uint32_t i = 0; i < t->path_count; ++i) {
      const PluginPathRef ref{file, t->version ? t->version : "", &t->paths[i]};
      if (const PathRow* other = reg.find(ref.path->name))
        throw plugin_error(file, other->plugin_file.empty()
                                     ? fmt::format("path '{}' clashes with the built-in path of that name", other->name)
                                     : fmt::format("path '{}' clashes with the path of that name from plugin {}",
                                                   other->name, other->plugin_file));
      reg.add(plugin_row(ref));
    }
  }
}

Registry registry_with_plugins(const DeviceFacts& device, const std::vector<std::string>& files,
                               const std::optional<DispatchChoice>& dispatch) {
  Registry reg = builtin_registry(device, dispatch);
  add_plugin_paths(reg, files);
  return reg;
}

}  // namespace fa
