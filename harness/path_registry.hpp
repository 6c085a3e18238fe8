// Self-registration of path rows: each path file builds its row in a factory next to its gate
// and registers it with FA_REGISTER_PATH(factory); the registry above harness/ (paths/) calls the
// factories once the device is known. The harness never names a path. The objects that register
// must reach the link whole (CMakeLists.txt links them as an OBJECT library), or rows vanish.
#pragma once
#include <vector>

#include "harness/path.hpp"

namespace fa {

using PathRowFactory = PathRow (*)(const DeviceFacts&);
bool register_path(PathRowFactory f);  // appends to a function-local static list; returns true
const std::vector<PathRowFactory>& registered_paths();

#define FA_REGISTER_PATH(factory) \
  [[maybe_unused]] static const bool fa_registered_##factory = ::fa::register_path(factory)

}  // namespace fa
