# cmake -DBUILD_DIR=... -DPREFIX=... -P install_into_prefix.cmake
# A fresh prefix each run, so a file the install rules no longer list cannot
# linger and make a consumer pass.
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc})")
endif()
foreach(file lib/cmake/troupe/troupeConfig.cmake lib/cmake/troupe/troupeConfigVersion.cmake
             lib/pkgconfig/troupe.pc bin/troupe include/troupe/actors/runtime.hpp)
  if(NOT EXISTS "${PREFIX}/${file}")
    message(FATAL_ERROR "the install has no ${file}")
  endif()
endforeach()
# Private headers stay in the source tree.
file(GLOB_RECURSE private_headers "${PREFIX}/include/*/detail/*")
if(private_headers)
  message(FATAL_ERROR "headers under detail/ were installed: ${private_headers}")
endif()
