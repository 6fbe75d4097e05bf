#pragma once
// Tools that come with troupe, for the command line and for programs that
// want them:
//   calculator    {"expression": "2 * (3 + 4.5) ^ 2"} -> {"expression", "value"}
//                 + - * / % ^, parentheses, unary minus, decimals and
//                 exponents; a bad expression or a division by zero is a
//                 typed tool error the model can read.
//   current_time  {} -> {"utc": "2026-11-21T06:45:00.123Z", "unix_ms": ...}
//   ask_human     {"question": "Which day suits you?"} -> the person's answer
//                 (a string). It never runs: a call pauses the request as a
//                 call that needs approval does (docs/approvals.md), and a
//                 decision's response is its result. Not in builtin_tools():
//                 a program that has a person to ask adds it.

#include "runtime/tools/tool.hpp"

#include <string_view>
#include <vector>

namespace troupe {

tool calculator_tool();
tool current_time_tool();
tool ask_human_tool();
// Every built-in tool, for a program that offers them all by name.
std::vector<tool> builtin_tools();

// Evaluates an arithmetic expression; throws tool_failure("invalid_expression")
// naming the position of the problem.
double evaluate_expression(std::string_view expression);

}  // namespace troupe
