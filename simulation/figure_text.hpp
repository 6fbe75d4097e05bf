#pragma once
// Figures as a report shows them to people: counts with their thousands
// grouped, dollars with enough digits to tell small costs apart, durations
// in the unit that keeps them short. Shared by the estimate and the HTML report.

#include <cstdint>
#include <string>

namespace troupe {

// 1234567 -> "1,234,567"; a fraction is rounded to the nearest integer.
std::string grouped(double n);
std::string grouped(std::int64_t n);
// "$12.35", "$0.0123" (three significant digits below a dollar), "$0".
std::string dollars(double d);
// "12.3" with `decimals` digits after the point.
std::string fixed(double x, int decimals);

}  // namespace troupe
