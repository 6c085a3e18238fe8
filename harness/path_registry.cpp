// The list FA_REGISTER_PATH appends to. Function-local, so it exists before the first static
// initializer of any path file runs, whatever the link order.
#include "harness/path_registry.hpp"

namespace fa {
namespace {

std::vector<PathRowFactory>& factories() {
  static std::vector<PathRowFactory> list;
  return list;
}

}  // namespace

bool register_path(PathRowFactory f) {
  factories().push_back(f);
  return true;
}

const std::vector<PathRowFactory>& registered_paths() { return factories(); }

}  // namespace fa
