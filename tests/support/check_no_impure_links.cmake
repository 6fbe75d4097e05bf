# Fails when the given executable depends on a library the pure core must not
# use. Run by ctest against the pure layers' and the scenario test programs.
execute_process(COMMAND ldd "${TARGET_FILE}" OUTPUT_VARIABLE deps RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ldd failed on ${TARGET_FILE}")
endif()
foreach(lib caf_core caf_io curl sqlite3 libpq)
  if(deps MATCHES "${lib}")
    message(FATAL_ERROR "${TARGET_FILE} links ${lib}, which the pure layers must not depend on:\n${deps}")
  endif()
endforeach()
message(STATUS "no impure libraries linked")
