# Compiler outputs cached with ccache where it is installed (scripts/setup.sh installs it): a fresh
# clone (CI's, every run) then compiles only what changed since the cache last saw these sources.
# CCACHE_BASEDIR is the repository (this file's parent folder; fuzz/ includes it too), so the
# clone's own path stays out of the compiler command lines; the host targets' unity sources still
# name each file by its absolute path, so those hit only in a clone at the same path (docs/build.md).
# CCACHE_DEPEND: ccache hashes the source and every header the compiler's -MD output names, and
# never runs the preprocessor. Its preprocessor mode
# ran `nvcc -E`, which preprocesses the host pass only: an edit inside device-only code (under
# __CUDA_ARCH__) hashed like the code before it, and ccache 4.7 returned the stale object (seen
# 2026-11-24: fa_mma.hip.o from before a kernel fix, 11.3 MB against the fresh compile's 12.7 MB).
# A launcher given on the command line wins; -DFABENCH_CCACHE=OFF compiles everything every time.
option(FABENCH_CCACHE "Cache compiler outputs with ccache where it is installed" ON)
find_program(FABENCH_CCACHE_PROGRAM ccache)
if(FABENCH_CCACHE AND FABENCH_CCACHE_PROGRAM)
  get_filename_component(fabench_repo "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
  foreach(lang C CXX CUDA)
    if(NOT DEFINED CMAKE_${lang}_COMPILER_LAUNCHER)
      set(CMAKE_${lang}_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${fabench_repo} CCACHE_DEPEND=1
                                          ${FABENCH_CCACHE_PROGRAM})
    endif()
  endforeach()
endif()
