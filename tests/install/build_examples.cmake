# cmake -DPREFIX=... -DSOURCE_DIR=... -DBINARY_DIR=... -DGENERATOR=... -DCXX_COMPILER=...
#       [-DCXX_LAUNCHER=...] [-DCXX_FLAGS=...] [-DLINK_FLAGS=...] -P build_examples.cmake
# examples/ as a project of its own: troupe comes from PREFIX only (no
# package registry, no source tree), then embedded_agent runs.
file(REMOVE_RECURSE "${BINARY_DIR}")
set(configure
  "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/examples" -B "${BINARY_DIR}" -G "${GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-Dtroupe_DIR=${PREFIX}/lib/cmake/troupe"
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}")
if(CXX_LAUNCHER)
  list(APPEND configure "-DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER}")
endif()
foreach(step configure build)
  if(step STREQUAL "build")
    set(command "${CMAKE_COMMAND}" --build "${BINARY_DIR}")
  else()
    set(command ${configure})
  endif()
  execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "examples/ against the installed troupe: ${step} failed\n${out}")
  endif()
endforeach()

file(READ "${BINARY_DIR}/compile_commands.json" commands)
foreach(flag "-I${SOURCE_DIR} " "-isystem ${SOURCE_DIR} ")
  string(FIND "${commands}" "${flag}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "a compile saw the source tree (${flag}):\n${commands}")
  endif()
endforeach()

execute_process(COMMAND "${BINARY_DIR}/embedded_agent" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(FIND "${out}" "answer: It is 21" answered)
if(NOT rc EQUAL 0 OR answered EQUAL -1)
  message(FATAL_ERROR "embedded_agent, built against the install, exited ${rc}:\n${out}")
endif()
message(STATUS "${out}")
