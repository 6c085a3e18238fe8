// Assembles the registry above harness/. FABENCH_GPU_PATHS (from CMakeLists.txt's one GPU path
// list, comma-separated) names every GPU path of the project; one whose row did not register (a
// build without a GPU backend) gets a placeholder that skips with the reason. FABENCH_GPU_TEST_PATHS
// (the list's test_* names: kernels/fa_test_*.hip) are test only: their rows, real or placeholder,
// are shown only with FABENCH_TEST_PATHS=1, after the listed ones.
#include "paths/builtin.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "harness/path_registry.hpp"
#include "paths/auto_path.hpp"
#ifdef FABENCH_HAS_GPU
#include "kernels/runtime/gpu_device.hpp"
#endif

namespace fa {
namespace {

bool test_paths_on() {
  const char* on = std::getenv("FABENCH_TEST_PATHS");
  return on && std::string(on) == "1";
}

// A GPU row from a kernels/fa_test_*.hip file: in the registry only while the test switch is on.
bool hidden_test_row(const PathRow& r) { return r.kind == "gpu" && r.name.rfind("test-", 0) == 0 && !test_paths_on(); }

std::vector<std::string> listed_gpu_paths(const char* list) {
  std::vector<std::string> names;
  std::istringstream in(list);
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

Registry builtin_registry(const DeviceFacts& device, const std::optional<DispatchChoice>& dispatch) {
  std::vector<PathRow> rows;
  for (PathRowFactory f : registered_paths()) {
    rows.push_back(f(device));
    for (size_t i = 0; i + 1 < rows.size(); ++i)
      if (rows[i].name == rows.back().name) throw std::logic_error("two rows register path " + rows[i].name);
  }
  std::vector<std::string> gpu_list = listed_gpu_paths(FABENCH_GPU_PATHS);
  if (test_paths_on())
    for (const auto& name : listed_gpu_paths(FABENCH_GPU_TEST_PATHS)) gpu_list.push_back(name);
  for (const auto& name : gpu_list)
    if (std::none_of(rows.begin(), rows.end(), [&](const PathRow& r) { return r.name == name; }))
      rows.push_back(placeholder(name, device));
  rows.erase(std::remove_if(rows.begin(), rows.end(), hidden_test_row), rows.end());

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
  reg.add(auto_row(rows, device, dispatch ? *dispatch : auto_dispatch(device)));
  return reg;
}

}  // namespace fa
