#pragma once
// Lets Catch2 print a decoded<T>: "ok", or the decode error with its field.

#include "signals/decode_error.hpp"

#include <catch2/catch.hpp>

namespace Catch {
template <class T>
struct StringMaker<troupe::decoded<T>> {
  static std::string convert(const troupe::decoded<T>& r) {
    return r ? std::string("ok") : "decode error: " + r.error().describe();
  }
};
template <>
struct StringMaker<troupe::decode_error> {
  static std::string convert(const troupe::decode_error& e) { return e.describe(); }
};
}  // namespace Catch
