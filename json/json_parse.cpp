#include "json/json_parse.hpp"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>
#include <boost/json/value_stack.hpp>
#include <boost/system/system_error.hpp>

#include <charconv>
#include <cmath>
#include <string>

namespace troupe {

namespace json = boost::json;

namespace {

class json_parse_category : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "troupe.json_parse"; }
  std::string message(int) const override { return "a number beyond the range of a double (about 1.8e308)"; }
};

// Boost.JSON's own handler for building a value (detail::handler), but a
// double is read again from its text.
class value_handler {
 public:
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  value_handler(unsigned char* buffer, std::size_t size) : stack(json::storage_ptr(), buffer, size) {}

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) { return true; }
  bool on_object_end(std::size_t n, json::error_code&) {
    stack.push_object(n);
    return true;
  }
  bool on_array_begin(json::error_code&) { return true; }
  bool on_array_end(std::size_t n, json::error_code&) {
    stack.push_array(n);
    return true;
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    stack.push_chars(s);
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code&) {
    stack.push_key(s);
    return true;
  }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    stack.push_chars(s);
    return true;
  }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    stack.push_string(s);
    return true;
  }
  bool on_number_part(json::string_view s, json::error_code&) {
    number_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
    number_.clear();
    stack.push_int64(i);
    return true;
  }
  bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
    number_.clear();
    stack.push_uint64(u);
    return true;
  }
  bool on_double(double approximate, json::string_view s, json::error_code& ec) {
    std::string_view text(s.data(), s.size());
    if (!number_.empty()) text = number_.append(text);
    double d = approximate;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (error == std::errc::result_out_of_range) {
      // from_chars leaves `d` alone then; Boost's approximation tells an
      // overflow from an underflow.
      if (std::abs(approximate) > 1) {
        ec = json_parse_error::number_out_of_range;
        return false;
      }
      d = text.front() == '-' ? -0.0 : 0.0;
    }
    number_.clear();
    stack.push_double(d);
    return true;
  }
  bool on_bool(bool b, json::error_code&) {
    stack.push_bool(b);
    return true;
  }
  bool on_null(json::error_code&) {
    stack.push_null();
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

  json::value_stack stack;

 private:
  std::string number_;  // a number's text so far, when a buffer ended in it
};

}  // namespace

boost::system::error_code make_error_code(json_parse_error e) {
  static const json_parse_category category;
  return {static_cast<int>(e), category};
}

json::value parse_json(std::string_view text, boost::system::error_code& ec, const json::parse_options& options) {
  unsigned char buffer[BOOST_JSON_STACK_BUFFER_SIZE];
  json::basic_parser<value_handler> parser(options, buffer, sizeof buffer);
  parser.handler().stack.reset();
  ec = {};
  const std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && used < text.size()) ec = json::error::extra_data;
  if (ec) return nullptr;
  return parser.handler().stack.release();
}

json::value parse_json(std::string_view text, const json::parse_options& options) {
  boost::system::error_code ec;
  json::value v = parse_json(text, ec, options);
  if (ec) throw boost::system::system_error(ec);
  return v;
}

}  // namespace troupe
