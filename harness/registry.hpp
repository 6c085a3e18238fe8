// The path registry: one table of every path (name, gate, preparer). The gate that decides what
// runs is the gate that reports what cannot, and it drives `auto` too. The table is filled above
// harness/ (paths/builtin.hpp) from the rows the built sources register.
#pragma once
#include <string>
#include <vector>

#include "harness/path.hpp"

namespace fa {

class Registry {
 public:
  const std::vector<PathRow>& rows() const { return rows_; }
  const PathRow* find(const std::string& name) const;
  void add(PathRow row) { rows_.push_back(std::move(row)); }
  // Whether a path can run on this machine at all, and if not, why.
  std::optional<std::string> unavailable(const PathRow& row, const DeviceFacts& device) const;
  std::vector<std::string> available_names(const DeviceFacts& device) const;

 private:
  std::vector<PathRow> rows_;
};

}  // namespace fa
