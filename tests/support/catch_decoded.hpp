#pragma once
// Lets Catch2 print our result types (decoded<T>, stored<T>): "ok", or the
// error with what it says.

#include "json/decode_error.hpp"

#include <catch2/catch.hpp>

namespace Catch {
template <class T, class E>
struct StringMaker<boost::system::result<T, E>> {
  static std::string convert(const boost::system::result<T, E>& r) {
    if (r) return "ok";
    const E& e = r.error();
    if constexpr (requires { e.describe(); })
      return "error: " + e.describe();
    else
      return "error: " + e.type + ": " + e.message;
  }
};
template <>
struct StringMaker<troupe::decode_error> {
  static std::string convert(const troupe::decode_error& e) { return e.describe(); }
};
}  // namespace Catch
