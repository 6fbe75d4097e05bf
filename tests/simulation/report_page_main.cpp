// Writes the HTML report of the small fixture run (report_fixture.hpp and
// fixtures/small_run.jsonl) to the file named on the command line, for the
// browser test (report_page.test.mjs) to open.

#include "simulation/html_report.hpp"
#include "simulation/report_fixture.hpp"

#include <exception>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: simulation_report_page OUT.html\n";
    return 2;
  }
  try {
    troupe::write_html_report(troupe::testing::small_run_report(), troupe::testing::small_run_log(), argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "simulation_report_page: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
