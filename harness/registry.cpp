// Lookups over the path table: by name, and which rows can run on this machine.
#include "harness/registry.hpp"

namespace fa {

const PathRow* Registry::find(const std::string& name) const {
  for (const auto& r : rows_)
    if (r.name == name) return &r;
  return nullptr;
}

std::optional<std::string> Registry::unavailable(const PathRow& row, const DeviceFacts& device) const {
  if (!row.prepare) return device.gpu_absent_why.empty() ? "not built" : device.gpu_absent_why;
  if (row.kind == "gpu" && row.name != "auto" && !device.gpu) return device.gpu_absent_why;
  return std::nullopt;
}

std::vector<std::string> Registry::available_names(const DeviceFacts& device) const {
  std::vector<std::string> out;
  for (const auto& r : rows_)
    if (!unavailable(r, device)) out.push_back(r.name);
  return out;
}

}  // namespace fa
