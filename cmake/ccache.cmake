# Compiler outputs cached with ccache where it is installed (scripts/setup.sh installs it): a fresh
# clone (CI's, every run) then compiles only what changed since the cache last saw these sources.
# CCACHE_BASEDIR is the repository (this file's parent folder; fuzz/ includes it too), so the
# clone's own path stays out of the hashes. A launcher given on the command line wins;
# -DFABENCH_CCACHE=OFF compiles everything every time.
option(FABENCH_CCACHE "Cache compiler outputs with ccache where it is installed" ON)
find_program(FABENCH_CCACHE_PROGRAM ccache)
if(FABENCH_CCACHE AND FABENCH_CCACHE_PROGRAM)
  get_filename_component(fabench_repo "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
  foreach(lang C CXX CUDA)
    if(NOT DEFINED CMAKE_${lang}_COMPILER_LAUNCHER)
      set(CMAKE_${lang}_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${fabench_repo}
                                          ${FABENCH_CCACHE_PROGRAM})
    endif()
  endforeach()
endif()
