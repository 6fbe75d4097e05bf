# Fails when a public header reaches a private one, or a dependency an
# embedder need not have. Private headers are those under a detail/ folder;
# every other header in the library folders is public (installed).
#   - no public header includes a header under a detail/ folder;
#   - no public header includes CAF, libcurl, SQLite, libpq, valijson or toml++;
#   - no example includes a header under a detail/ folder (examples build
#     against the installed headers).
# Checking each public header's own includes is enough for the transitive
# rule: a public header can only reach what other public headers include.
#   cmake -DSOURCE_DIR=<top> [-DFOLDERS=a;b] [-DCONSUMERS=examples] -P check_public_headers.cmake
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "SOURCE_DIR not given")
endif()
if(NOT DEFINED FOLDERS)
  set(FOLDERS base json signals directives thread context strategy config runtime world actors simulation)
endif()
if(NOT DEFINED CONSUMERS)
  set(CONSUMERS examples)
endif()

set(private_dependency "^(caf/|curl/|sqlite3\\.h|libpq-fe\\.h|postgresql/|valijson/|toml\\+\\+/)")
set(violations "")
set(checked 0)

function(includes_of file out)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][^\">]+[\">]")
  set(result "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*([\"<][^\">]+[\">]).*" "\\1" inc "${line}")
    list(APPEND result "${inc}")
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

foreach(folder IN LISTS FOLDERS)
  file(GLOB_RECURSE headers RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/${folder}/*.hpp" "${SOURCE_DIR}/${folder}/*.h")
  foreach(header IN LISTS headers)
    if(header MATCHES "(^|/)detail/")
      continue()
    endif()
    math(EXPR checked "${checked} + 1")
    includes_of("${SOURCE_DIR}/${header}" incs)
    foreach(inc IN LISTS incs)
      string(REGEX REPLACE "^[\"<](.*)[\">]$" "\\1" path "${inc}")
      if(inc MATCHES "^\"" AND path MATCHES "(^|/)detail/")
        string(APPEND violations "  ${header} includes the private ${path}\n")
      elseif(path MATCHES "${private_dependency}")
        string(APPEND violations "  ${header} includes ${path}, which an embedder need not have\n")
      endif()
    endforeach()
  endforeach()
endforeach()

foreach(folder IN LISTS CONSUMERS)
  file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/${folder}/*.cpp" "${SOURCE_DIR}/${folder}/*.hpp")
  foreach(source IN LISTS sources)
    math(EXPR checked "${checked} + 1")
    includes_of("${SOURCE_DIR}/${source}" incs)
    foreach(inc IN LISTS incs)
      if(inc MATCHES "^\".*(^|/)detail/")
        string(APPEND violations "  ${source} includes the private ${inc}\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "no headers found under ${SOURCE_DIR} (${FOLDERS})")
endif()
if(violations)
  message(FATAL_ERROR "public headers reach private ones (move the header into a detail/ folder, "
                      "or stop including the private one):\n${violations}")
endif()
message(STATUS "${checked} public headers and examples include no private header")
