#include "runtime/base64.hpp"

#include <catch2/catch.hpp>

#include <string>

using troupe::base64_encoded;

TEST_CASE("base64 gives RFC 4648's test vectors") {
  CHECK(base64_encoded("") == "");
  CHECK(base64_encoded("f") == "Zg==");
  CHECK(base64_encoded("fo") == "Zm8=");
  CHECK(base64_encoded("foo") == "Zm9v");
  CHECK(base64_encoded("foob") == "Zm9vYg==");
  CHECK(base64_encoded("fooba") == "Zm9vYmE=");
  CHECK(base64_encoded("foobar") == "Zm9vYmFy");
}

TEST_CASE("base64 encodes bytes above 0x7f and zero bytes") {
  CHECK(base64_encoded(std::string("\0", 1)) == "AA==");
  CHECK(base64_encoded("\xff\xfe\xfd") == "//79");
  CHECK(base64_encoded("\xC3\xA9t\xC3\xA9") == "w6l0w6k=");  // "été" in UTF-8
}
