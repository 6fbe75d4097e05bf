#pragma once
// What the store test cases share: the backends, entries to commit, and a
// way for a case to end early, visibly, when its backend has no server.

#include "support/catch_decoded.hpp"
#include "support/store_backends.hpp"

#include <catch2/catch.hpp>

#include <iostream>
#include <string>
#include <vector>

// Ends a test case early, visibly, when its backend has no server.
#define REQUIRE_BACKEND(backend)                   \
  if (!(backend).ready()) {                        \
    std::cout << (backend).why_not() << std::endl; \
    return;                                        \
  }

namespace troupe::testing {

inline entry_draft note(int n, std::string text = "") {
  return {"note", {{"n", n}, {"text", text}}, {{"request_id", "r" + std::to_string(n)}}};
}
inline entry_draft said(std::string role, std::string content) {
  return {"message", {{"role", std::move(role)}, {"content", std::move(content)}}, {}};
}
inline entry_draft called(std::string tool_call_id) {
  return {
      "tool_call", {{"name", "calculator"}, {"arguments", {{"expression", "1+1"}}}}, {{"tool_call_id", tool_call_id}}};
}

// Appends and commits; the thread's rev before is the expected one.
inline void commit(thread_store& store, thread& t, std::vector<entry_draft> drafts, std::int64_t now, id_source& ids) {
  const std::uint64_t rev = t.rev();
  t.append(std::move(drafts), now, ids);
  REQUIRE(store.append(t, rev));
}

}  // namespace troupe::testing
