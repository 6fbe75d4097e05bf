# What `cmake --install` puts where, and the package an embedding program
# finds it by:
#
#   <prefix>/include/troupe/<folder>/...   public headers, in-tree spelling kept
#   <prefix>/lib/libtroupe_*.a             the libraries (static)
#   <prefix>/lib/cmake/troupe/             troupeConfig.cmake, version, targets
#   <prefix>/lib/pkgconfig/troupe.pc
#   <prefix>/bin/troupe                    the command
#   <prefix>/share/troupe/examples/        the examples, buildable on their own
#
# A library folder is any top-level folder that is not tooling (the table in
# docs/architecture.md): folders that appear later are installed with no
# change here. Inside one, every header is public except those under a
# `detail/` folder, which no installed header may include.
#
# Included at the end of the top-level CMakeLists.txt, once every library is
# defined.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TROUPE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/troupe")
set(TROUPE_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/troupe")

# Top-level folders that hold tooling, programs or tests, never the library.
set(TROUPE_TOOLING_FOLDERS apps bench cmake docs examples fuzz scripts tests)

file(GLOB _troupe_top_level LIST_DIRECTORIES true CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/*")
set(TROUPE_LIBRARY_FOLDERS "")
foreach(path IN LISTS _troupe_top_level)
  get_filename_component(name "${path}" NAME)
  if(NOT IS_DIRECTORY "${path}" OR name MATCHES "^\\." OR name IN_LIST TROUPE_TOOLING_FOLDERS
     OR EXISTS "${path}/CMakeCache.txt" OR path STREQUAL PROJECT_BINARY_DIR)
    continue()
  endif()
  file(GLOB_RECURSE _troupe_headers "${path}/*.hpp")
  if(_troupe_headers)
    list(APPEND TROUPE_LIBRARY_FOLDERS "${name}")
  endif()
endforeach()

# Patterns are matched when installing, so a header added or moved into
# detail/ needs no reconfigure.
foreach(folder IN LISTS TROUPE_LIBRARY_FOLDERS)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/${folder}/" DESTINATION "${TROUPE_INSTALL_INCLUDEDIR}/${folder}"
          COMPONENT dev FILES_MATCHING PATTERN "*.hpp" PATTERN "detail" EXCLUDE)
endforeach()

# The libraries: every library target defined in a library folder.
function(_troupe_collect_targets dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _troupe_collect_targets("${sub}" sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

set(TROUPE_LIBRARIES "")
foreach(folder IN LISTS TROUPE_LIBRARY_FOLDERS)
  if(EXISTS "${PROJECT_SOURCE_DIR}/${folder}/CMakeLists.txt")
    _troupe_collect_targets("${PROJECT_SOURCE_DIR}/${folder}" targets)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      if(type MATCHES "^(STATIC|SHARED|INTERFACE)_LIBRARY$")
        list(APPEND TROUPE_LIBRARIES ${target})
      endif()
    endforeach()
  endif()
endforeach()

# A library found by path in the build is linked by the imported target its
# find module defines once installed.
set(_troupe_path_targets "${LIBPQ_LIBRARY}=PostgreSQL::PostgreSQL")
# Header-only libraries the libraries use privately, whose imported targets
# are not visible from here (each is found in the folder that uses it).
set(TROUPE_HEADER_ONLY_DEPENDENCIES utf8cpp)

# The link interface as a consumer needs it: a library's own folder on the
# include path only while building (installed, include/troupe takes its
# place), and no compile-only target (warning flags, header-only libraries
# used privately) left in a static library's link line.
set(_troupe_dependencies "")
foreach(target IN LISTS TROUPE_LIBRARIES)
  get_target_property(includes ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(fixed_includes "")
  foreach(dir IN LISTS includes)
    cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${dir}" NORMALIZE in_source)
    cmake_path(IS_PREFIX PROJECT_BINARY_DIR "${dir}" NORMALIZE in_build)
    if(in_source OR in_build)
      list(APPEND fixed_includes "$<BUILD_INTERFACE:${dir}>")
    elseif(dir)
      list(APPEND fixed_includes "${dir}")
    endif()
  endforeach()
  list(APPEND fixed_includes "$<INSTALL_INTERFACE:${TROUPE_INSTALL_INCLUDEDIR}>")
  set_property(TARGET ${target} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${fixed_includes}")

  get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
  set(fixed_links "")
  foreach(item IN LISTS links)
    if(NOT item)
      continue()
    endif()
    set(name "${item}")
    if(item MATCHES "^\\$<LINK_ONLY:(.*)>$")
      set(name "${CMAKE_MATCH_1}")
    endif()
    set(replacement "")
    foreach(pair IN LISTS _troupe_path_targets)
      string(REPLACE "=" ";" pair "${pair}")
      list(GET pair 0 path)
      list(GET pair 1 imported)
      if(path AND name STREQUAL path)
        set(replacement "${imported}")
      endif()
    endforeach()
    if(replacement)
      string(REPLACE "${name}" "$<BUILD_INTERFACE:${name}>$<INSTALL_INTERFACE:${replacement}>" item "${item}")
      list(APPEND _troupe_dependencies "${replacement}")
    elseif(name IN_LIST TROUPE_LIBRARIES OR name MATCHES "^\\$<")
    elseif(NOT name STREQUAL item AND name IN_LIST TROUPE_HEADER_ONLY_DEPENDENCIES)
      set(item "$<BUILD_INTERFACE:${item}>")
    elseif(NOT name STREQUAL item AND TARGET "${name}")
      get_target_property(name_type "${name}" TYPE)
      get_target_property(name_links "${name}" INTERFACE_LINK_LIBRARIES)
      if(name_type STREQUAL "INTERFACE_LIBRARY" AND NOT name_links)
        set(item "$<BUILD_INTERFACE:${item}>")
      else()
        list(APPEND _troupe_dependencies "${name}")
      endif()
    else()
      list(APPEND _troupe_dependencies "${name}")
    endif()
    list(APPEND fixed_links "${item}")
  endforeach()
  set_property(TARGET ${target} PROPERTY INTERFACE_LINK_LIBRARIES "${fixed_links}")

  string(REGEX REPLACE "^troupe_" "" export_name "${target}")
  set_target_properties(${target} PROPERTIES EXPORT_NAME "${export_name}")
endforeach()
list(REMOVE_DUPLICATES _troupe_dependencies)

# troupe::troupe: everything an embedding program links, in one name.
add_library(troupe_umbrella INTERFACE)
target_link_libraries(troupe_umbrella INTERFACE ${TROUPE_LIBRARIES})
set_target_properties(troupe_umbrella PROPERTIES EXPORT_NAME troupe)
add_library(troupe::troupe ALIAS troupe_umbrella)

install(TARGETS ${TROUPE_LIBRARIES} troupe_umbrella EXPORT troupeTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev)
install(EXPORT troupeTargets NAMESPACE troupe:: DESTINATION "${TROUPE_INSTALL_CMAKEDIR}" COMPONENT dev)

# Static archives keep their symbols when stripped: only the debug sections
# go, as `cmake --install --strip` and the Debian package ask.
foreach(target IN LISTS TROUPE_LIBRARIES)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "STATIC_LIBRARY" AND CMAKE_STRIP)
    install(CODE "if(CMAKE_INSTALL_DO_STRIP)
  execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
                  \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:${target}>\")
endif()" COMPONENT dev)
  endif()
endforeach()

# How the installed config and troupe.pc find each dependency. Boost and CAF
# are asked for in the very version the archives were compiled against: their
# ABI changes between versions.
set(TROUPE_FIND_DEPENDENCIES "")
set(_troupe_boost_components "")
set(_troupe_pc_requires "")
set(_troupe_pc_libs "")
foreach(dep IN LISTS _troupe_dependencies)
  if(dep MATCHES "^Boost::(.*)$")
    set(component "${CMAKE_MATCH_1}")
    if(NOT component MATCHES "^(headers|boost|disable_autolinking|diagnostic_definitions|dynamic_linking)$")
      list(APPEND _troupe_boost_components "${component}")
      list(APPEND _troupe_pc_libs "-lboost_${component}")
    endif()
  elseif(dep MATCHES "^CAF::(.*)$")
    set(_troupe_need_caf TRUE)
    list(APPEND _troupe_pc_libs "-lcaf_${CMAKE_MATCH_1}")
  elseif(dep STREQUAL "Threads::Threads")  # always found, below
  elseif(dep STREQUAL "CURL::libcurl")
    string(APPEND TROUPE_FIND_DEPENDENCIES "find_dependency(CURL)\n")
    list(APPEND _troupe_pc_requires libcurl)
  elseif(dep STREQUAL "SQLite::SQLite3")
    string(APPEND TROUPE_FIND_DEPENDENCIES "find_dependency(SQLite3)\n")
    list(APPEND _troupe_pc_requires sqlite3)
  elseif(dep STREQUAL "OpenSSL::Crypto")
    string(APPEND TROUPE_FIND_DEPENDENCIES "find_dependency(OpenSSL COMPONENTS Crypto)\n")
    list(APPEND _troupe_pc_requires libcrypto)
  elseif(dep STREQUAL "PostgreSQL::PostgreSQL")
    string(APPEND TROUPE_FIND_DEPENDENCIES "find_dependency(PostgreSQL)\n")
    list(APPEND _troupe_pc_requires libpq)
  elseif(NOT dep MATCHES "::" AND NOT IS_ABSOLUTE "${dep}")
    list(APPEND _troupe_pc_libs "-l${dep}")  # a system library by name (dl, m, ...)
  else()
    message(FATAL_ERROR "A troupe library links ${dep}, which the installed package does not know how "
                        "to find: teach cmake/troupe_install.cmake (troupeConfig.cmake and troupe.pc) about it.")
  endif()
endforeach()
if(_troupe_boost_components)
  list(REMOVE_DUPLICATES _troupe_boost_components)
  list(JOIN _troupe_boost_components " " components)
  string(PREPEND TROUPE_FIND_DEPENDENCIES
         "find_dependency(Boost ${Boost_VERSION_MAJOR}.${Boost_VERSION_MINOR}.${Boost_VERSION_PATCH} EXACT CONFIG COMPONENTS ${components})\n")
endif()
if(_troupe_need_caf)
  string(PREPEND TROUPE_FIND_DEPENDENCIES "find_dependency(CAF ${CAF_VERSION} EXACT)\n")
  install(FILES "${PROJECT_SOURCE_DIR}/cmake/FindCAF.cmake" DESTINATION "${TROUPE_INSTALL_CMAKEDIR}" COMPONENT dev)
endif()
string(PREPEND TROUPE_FIND_DEPENDENCIES "find_dependency(Threads)\n")

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/troupeConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/package-config/troupeConfig.cmake"
                              INSTALL_DESTINATION "${TROUPE_INSTALL_CMAKEDIR}")
# 0.x: a new minor version may break the API.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/package-config/troupeConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/package-config/troupeConfig.cmake"
              "${PROJECT_BINARY_DIR}/package-config/troupeConfigVersion.cmake"
        DESTINATION "${TROUPE_INSTALL_CMAKEDIR}" COMPONENT dev)

# troupe.pc: the archives in link order (a library before those it uses).
function(_troupe_visit target)
  get_property(visited GLOBAL PROPERTY _troupe_visited)
  if(target IN_LIST visited)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY _troupe_visited ${target})
  get_target_property(links ${target} LINK_LIBRARIES)
  get_target_property(interface_links ${target} INTERFACE_LINK_LIBRARIES)
  foreach(item IN LISTS links interface_links)
    if(item IN_LIST TROUPE_LIBRARIES)
      _troupe_visit(${item})
    endif()
  endforeach()
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    set_property(GLOBAL APPEND PROPERTY _troupe_postorder ${target})
  endif()
endfunction()
foreach(target IN LISTS TROUPE_LIBRARIES)
  _troupe_visit(${target})
endforeach()
get_property(postorder GLOBAL PROPERTY _troupe_postorder)
list(REVERSE postorder)
set(TROUPE_PC_LIBS "")
foreach(target IN LISTS postorder)
  get_target_property(output_name ${target} OUTPUT_NAME)
  if(NOT output_name)
    set(output_name ${target})
  endif()
  string(APPEND TROUPE_PC_LIBS " -l${output_name}")
endforeach()
list(JOIN _troupe_pc_libs " " pc_libs)
string(APPEND TROUPE_PC_LIBS " ${pc_libs} -pthread")
# No tomlplusplus here, though config/detail/toml.hpp includes it: its .pc file asks
# for the compiled library, the archives use it header-only.
list(JOIN _troupe_pc_requires " " TROUPE_PC_REQUIRES)
file(RELATIVE_PATH TROUPE_PC_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" TROUPE_PC_PREFIX "${TROUPE_PC_PREFIX}")
configure_file("${PROJECT_SOURCE_DIR}/cmake/troupe.pc.in" "${PROJECT_BINARY_DIR}/package-config/troupe.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/package-config/troupe.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
        COMPONENT dev)

# The command, and the examples (sources, scripts, scenarios) beside it.
install(TARGETS troupe RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT cli)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/examples/" DESTINATION "${CMAKE_INSTALL_DATADIR}/troupe/examples"
        COMPONENT cli)
