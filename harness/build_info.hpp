// What the binary was built from, for records, --version and `info`.
#pragma once

namespace fa {

// The source commit at build time (cmake/git_stamp.cmake): 12 hex digits, "-dirty" where tracked
// files differed from it, "unknown" outside a git checkout.
const char* build_git_commit();

}  // namespace fa
