# Checks cmake/wire_digest.cmake on a small tree of its own in WORK_DIR: the
# digest follows includes to any depth, changes when an included header
# changes, stays when a file outside the includes changes, and the output is
# not rewritten while the digest stays (so nothing recompiles).
#
#   cmake -DSCRIPT=…/cmake/wire_digest.cmake -DWORK_DIR=… -P check_wire_digest.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
file(WRITE "${WORK_DIR}/src/wire.hpp" "#include \"types/a.hpp\"\n#include <string>\n")
file(WRITE "${WORK_DIR}/src/types/a.hpp" "#include \"types/b.hpp\"\nstruct a { int x; };\n")
file(WRITE "${WORK_DIR}/src/types/b.hpp" "struct b { int y; };\n")
file(WRITE "${WORK_DIR}/src/other.hpp" "struct unrelated {};\n")
set(out "${WORK_DIR}/digest.hpp")

function(digest_now result)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${WORK_DIR}/src -DROOT=wire.hpp -DOUTPUT=${out} -P ${SCRIPT}
                  RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "wire_digest.cmake failed")
  endif()
  file(STRINGS "${out}" line REGEX "TROUPE_WIRE_DIGEST")
  set(${result} "${line}" PARENT_SCOPE)
endfunction()

digest_now(first)
if(NOT first MATCHES "\"[0-9a-f]+\"")
  message(FATAL_ERROR "no digest in ${out}: ${first}")
endif()
file(TIMESTAMP "${out}" written "%s")

file(WRITE "${WORK_DIR}/src/other.hpp" "struct unrelated { int z; };\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)  # a rewrite would show in the timestamp
digest_now(after_unrelated)
file(TIMESTAMP "${out}" rewritten "%s")
if(NOT after_unrelated STREQUAL first)
  message(FATAL_ERROR "a header outside the wire's includes changed the digest")
endif()
if(NOT rewritten STREQUAL written)
  message(FATAL_ERROR "the digest file was rewritten though the digest stayed")
endif()

file(WRITE "${WORK_DIR}/src/types/b.hpp" "struct b { int y; int added; };\n")
digest_now(after_nested)
if(after_nested STREQUAL first)
  message(FATAL_ERROR "a header the wire includes through another did not change the digest")
endif()
message(STATUS "wire digest: ${first} -> ${after_nested}")
