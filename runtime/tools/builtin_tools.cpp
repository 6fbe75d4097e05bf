#include "runtime/tools/builtin_tools.hpp"

#include "runtime/clock.hpp"
#include "signals/envelope.hpp"

#include <charconv>
#include <cmath>
#include <string>

namespace troupe {

namespace {

// expression := term (('+' | '-') term)*
// term       := unary (('*' | '/' | '%') unary)*
// unary      := ('-' | '+') unary | power
// power      := primary ('^' unary)?          (right-associative)
// primary    := number | '(' expression ')'
class expression_parser {
 public:
  explicit expression_parser(std::string_view text) : s_(text) {}

  double parse() {
    const double v = expression();
    skip_space();
    if (i_ != s_.size()) fail("unexpected '" + std::string(1, s_[i_]) + "'");
    return v;
  }

 private:
  double expression() {
    double v = term();
    for (;;) {
      if (eat('+'))
        v += term();
      else if (eat('-'))
        v -= term();
      else
        return v;
    }
  }

  double term() {
    double v = unary();
    for (;;) {
      if (eat('*')) {
        v *= unary();
      } else if (eat('/')) {
        const double d = unary();
        if (d == 0) fail("division by zero");
        v /= d;
      } else if (eat('%')) {
        const double d = unary();
        if (d == 0) fail("division by zero");
        v = std::fmod(v, d);
      } else {
        return v;
      }
    }
  }

  double unary() {
    if (eat('-')) return -unary();
    if (eat('+')) return unary();
    return power();
  }

  double power() {
    const double base = primary();
    if (!eat('^')) return base;
    const double v = std::pow(base, unary());
    if (!std::isfinite(v)) fail("the result is not a finite number");
    return v;
  }

  double primary() {
    if (eat('(')) {
      const double v = expression();
      if (!eat(')')) fail("a ')' is missing");
      return v;
    }
    skip_space();
    double v = 0;
    const char* begin = s_.data() + i_;
    auto [end, ec] = std::from_chars(begin, s_.data() + s_.size(), v);
    if (ec != std::errc{} || end == begin) fail(i_ < s_.size() ? "expected a number" : "the expression ends too soon");
    i_ += static_cast<std::size_t>(end - begin);
    return v;
  }

  bool eat(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw tool_failure("invalid_expression", why + " at position " + std::to_string(i_ + 1));
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

double evaluate_expression(std::string_view expression) { return expression_parser(expression).parse(); }

tool calculator_tool() {
  tool t;
  t.spec = {"calculator", "Evaluates an arithmetic expression exactly as written: + - * / % ^ and parentheses.",
            boost::json::object{
                {"type", "object"},
                {"properties", {{"expression", {{"type", "string"}, {"description", "e.g. 2 * (3 + 4.5) ^ 2"}}}}},
                {"required", boost::json::array{"expression"}}}};
  t.blocking = false;
  t.retry.max_attempts = 1;
  t.run = [](const boost::json::object& args, const tool_context&) {
    const std::string_view expression = args.at("expression").as_string();
    const double v = evaluate_expression(expression);
    // Whole numbers as integers, so that the model reads 42 and not 4.2E1.
    boost::json::value value = v;
    if (std::abs(v) < 9e15 && v == std::floor(v)) value = static_cast<std::int64_t>(v);
    return boost::json::value{{"expression", expression}, {"value", value}};
  };
  return t;
}

tool current_time_tool() {
  tool t;
  t.spec = {"current_time", "The current date and time in UTC.", boost::json::object{{"type", "object"}}};
  t.blocking = false;
  t.retry.max_attempts = 1;
  t.run = [](const boost::json::object&, const tool_context&) {
    const std::int64_t now = wall_clock_ms();
    return boost::json::value{{"utc", format_rfc3339(now)}, {"unix_ms", now}};
  };
  return t;
}

tool ask_human_tool() {
  tool t;
  t.spec = {"ask_human",
            "Asks the person you work for a question and waits for the answer. Use it when you need a fact or a "
            "choice only they have.",
            boost::json::object{{"type", "object"},
                                {"properties", {{"question", {{"type", "string"}, {"description", "what to ask"}}}}},
                                {"required", boost::json::array{"question"}}},
            true};
  t.blocking = false;
  t.retry.max_attempts = 1;
  // The machine never runs a call of a tool a person answers; a program
  // that runs the tool itself learns why it has no answer.
  t.run = [](const boost::json::object&, const tool_context&) -> boost::json::value {
    throw tool_failure("unsupported", "ask_human is answered by a person through a decision; it does not run");
  };
  return t;
}

std::vector<tool> builtin_tools() { return {calculator_tool(), current_time_tool()}; }

}  // namespace troupe
