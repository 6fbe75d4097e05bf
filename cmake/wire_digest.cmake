# Writes OUTPUT, a header defining TROUPE_WIRE_DIGEST: the SHA-256 of the
# sources that decide what crosses between cluster nodes — ROOT (the wire's
# header) and every project header it includes, directly or not. Two builds
# whose wire sources are the same byte for byte read each other's messages;
# any change to them (a field, a variant alternative) gives another digest,
# and nodes with different digests refuse each other. The file is rewritten
# only when the digest changes, so an unrelated edit recompiles nothing.
#
#   cmake -DSOURCE_DIR=… -DROOT=actors/cluster/detail/wire.hpp -DOUTPUT=… -P wire_digest.cmake

cmake_minimum_required(VERSION 3.20)

set(pending "${ROOT}")
set(seen "")
while(pending)
  list(POP_FRONT pending current)
  if(current IN_LIST seen OR NOT EXISTS "${SOURCE_DIR}/${current}")
    continue()  # a system header, or one already read
  endif()
  list(APPEND seen "${current}")
  file(STRINGS "${SOURCE_DIR}/${current}" includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" included "${line}")
    list(APPEND pending "${included}")
  endforeach()
endwhile()

list(SORT seen)
set(material "")
foreach(path IN LISTS seen)
  file(READ "${SOURCE_DIR}/${path}" text)
  string(APPEND material "${path}\n${text}\n")
endforeach()
string(SHA256 digest "${material}")
string(SUBSTRING "${digest}" 0 16 digest)
list(LENGTH seen count)

set(content "// Made by cmake/wire_digest.cmake from ${count} headers; do not edit.\n#pragma once\n#define TROUPE_WIRE_DIGEST \"${digest}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" previous)
  if(previous STREQUAL content)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${content}")
