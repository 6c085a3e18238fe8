# ctest fixture (cmake -P): installs this build into a temporary prefix and builds
# examples/plugins/cpu OUT of the tree against it (find_package(fa_bench)), the way a user would.
# -DBUILD_DIR=<main build> -DSOURCE_DIR=<repo> -DWORK=<scratch folder> -DGENERATOR=<generator>
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
foreach(f bin/fa-bench include/fa_bench/plugin.h)
  if(NOT EXISTS ${WORK}/prefix/${f})
    message(FATAL_ERROR "the install has no ${f}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/plugins/cpu -B ${WORK}/example-cpu -G ${GENERATOR}
                        -DCMAKE_PREFIX_PATH=${WORK}/prefix -DCMAKE_BUILD_TYPE=Release RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring examples/plugins/cpu against the installed package failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/example-cpu RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building examples/plugins/cpu failed (${rc})")
endif()
