// Assembles the registry above harness/. FABENCH_GPU_PATHS (from CMakeLists.txt's one GPU path
// list, comma-separated) names every GPU path of the project; one whose row did not register (a
// build without a GPU backend) gets a placeholder that skips with the reason.
#include "paths/builtin.hpp"

#include <omp.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "harness/path_registry.hpp"
#include "paths/auto_path.hpp"
#ifdef FABENCH_HAS_GPU
#include "kernels/gpu_device.hpp"
#endif

namespace fa {
namespace {

std::vector<std::string> listed_gpu_paths() {
  std::vector<std::string> names;
  std::istringstream in(FABENCH_GPU_PATHS);
  for (std::string n; std::getline(in, n, ',');)
    if (!n.empty()) names.push_back(n);
  return names;
}

PathRow placeholder(const std::string& name, const DeviceFacts& device) {
  const std::string why = device.gpu_absent_why.empty() ? "not in this build" : device.gpu_absent_why;
  return PathRow{name, "gpu", "GPU path (not in this build)", "needs a GPU backend", false,
                 [why](const Problem&, int, const GateContext&) { return std::optional<std::string>(why); },
                 nullptr};
}

}  // namespace

DeviceFacts probe_device() {
#ifdef FABENCH_HAS_GPU
  DeviceFacts f = gpu::query_device();
#else
  DeviceFacts f;
  f.gpu_absent_why = "built without a GPU backend (FABENCH_GPU=none)";
#endif
  f.cpu_threads = omp_get_max_threads();
  return f;
}

Registry builtin_registry(const DeviceFacts& device) {
  std::vector<PathRow> rows;
  for (PathRowFactory f : registered_paths()) {
    rows.push_back(f(device));
    for (size_t i = 0; i + 1 < rows.size(); ++i)
      if (rows[i].name == rows.back().name) throw std::logic_error("two rows register path " + rows[i].name);
  }
  const std::vector<std::string> gpu_list = listed_gpu_paths();
  for (const auto& name : gpu_list)
    if (std::none_of(rows.begin(), rows.end(), [&](const PathRow& r) { return r.name == name; }))
      rows.push_back(placeholder(name, device));

  auto place = [&](const PathRow& r) -> size_t {  // the oracle, CPU rows, listed GPU rows, the rest
    if (r.oracle) return 0;
    if (r.kind == "cpu") return 1;
    const auto at = std::find(gpu_list.begin(), gpu_list.end(), r.name);
    return 2 + size_t(at - gpu_list.begin());  // unlisted rows: past the list's end
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const PathRow& a, const PathRow& b) {
    const size_t pa = place(a), pb = place(b);
    return pa != pb ? pa < pb : a.name < b.name;
  });

  Registry reg;
  for (auto& r : rows) reg.add(r);
  reg.add(auto_row(rows, device));
  return reg;
}

}  // namespace fa
