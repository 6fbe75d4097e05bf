# cmake -DPREFIX=... -DSOURCE_DIR=... -DBINARY_DIR=... -DPROGRAM=... -DCXX_COMPILER=...
#       [-DCXX_LAUNCHER=...] [-DCXX_FLAGS=...] [-DLINK_FLAGS=...] -P build_with_pkg_config.cmake
# The installed headers stand alone (none includes a header the install left
# out, such as one under detail/), and PROGRAM compiles and links with exactly
# what `pkg-config --cflags --libs troupe` says, then runs.
set(include_root "${PREFIX}/include/troupe")
file(GLOB_RECURSE headers RELATIVE "${include_root}" "${include_root}/*.hpp")
if(NOT headers)
  message(FATAL_ERROR "no headers under ${include_root}")
endif()
set(missing "")
foreach(header IN LISTS headers)
  file(STRINGS "${include_root}/${header}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  get_filename_component(header_dir "${header}" DIRECTORY)
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" included "${line}")
    if(NOT EXISTS "${include_root}/${included}" AND NOT EXISTS "${include_root}/${header_dir}/${included}")
      list(APPEND missing "${header} includes \"${included}\"")
    endif()
  endforeach()
endforeach()
if(missing)
  list(JOIN missing "\n  " missing)
  message(FATAL_ERROR "installed headers include headers that are not installed:\n  ${missing}")
endif()

find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/lib/pkgconfig")
execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs troupe RESULT_VARIABLE rc OUTPUT_VARIABLE flags
                ERROR_VARIABLE error OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs troupe failed: ${error}")
endif()
string(FIND " ${flags} " " -I${SOURCE_DIR} " at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "troupe.pc points at the source tree: ${flags}")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
separate_arguments(cxx_flags UNIX_COMMAND "${CXX_FLAGS}")
separate_arguments(link_flags UNIX_COMMAND "${LINK_FLAGS}")

# The program is copied out of the source tree: a quoted include would
# otherwise find its neighbours there first.
file(REMOVE_RECURSE "${BINARY_DIR}")
file(MAKE_DIRECTORY "${BINARY_DIR}")
get_filename_component(program_name "${PROGRAM}" NAME)
file(COPY "${PROGRAM}" DESTINATION "${BINARY_DIR}")
execute_process(COMMAND ${CXX_LAUNCHER} "${CXX_COMPILER}" ${cxx_flags} "${BINARY_DIR}/${program_name}"
                        -o "${BINARY_DIR}/program" ${flags} ${link_flags}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling ${program_name} with pkg-config troupe failed:\n${out}")
endif()

execute_process(COMMAND "${BINARY_DIR}/program" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "installed")
  message(FATAL_ERROR "the program built against the install exited ${rc}:\n${out}")
endif()
message(STATUS "${out}")
