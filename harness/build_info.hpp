// What the binary was built from, for the records' metadata, `--version` and `info`. The commit is
// stamped when the binary is built (cmake/git_stamp.cmake writes the definition into the build
// folder's generated/git_commit.cpp), so a build folder configured at an older commit still names
// the commit it compiled.
#pragma once

namespace fa {

// The source commit at build time: 12 hex digits, "-dirty" where tracked files differed from it,
// "unknown" outside a git checkout.
const char* build_git_commit();

}  // namespace fa
