#include "simulation/html_report.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "simulation/report_fixture.hpp"

using namespace troupe;
using Catch::Contains;

namespace {

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The part of the page from `start` to the next `end`.
std::string between(const std::string& page, const std::string& start, const std::string& end) {
  const auto from = page.find(start);
  REQUIRE(from != std::string::npos);
  const auto to = page.find(end, from);
  REQUIRE(to != std::string::npos);
  return page.substr(from, to - from);
}

std::string page_with_log() {
  const auto digest = digest_event_log(testing::small_run_log());
  return html_report(testing::small_run_report(), &digest);
}

}  // namespace

TEST_CASE("html report: every text from the run is escaped") {
  const std::string page = page_with_log();
  CHECK_THAT(page, Contains("<h1>town &lt;square&gt;</h1>"));
  CHECK_THAT(page, Contains("What do you think of &lt;b&gt;p1&lt;/b&gt;?"));
  CHECK_THAT(page, Contains("It&#39;s &quot;fine&quot; &amp; &lt;i&gt;good&lt;/i&gt;"));
  CHECK_THAT(page, Contains("no answer in 120 s &lt;b&gt;late&lt;/b&gt;"));
  CHECK_THAT(page, Contains("Breaking &lt;news&gt;"));
  CHECK_THAT(page, !Contains("<square>"));
  CHECK_THAT(page, !Contains("<b>"));
  CHECK_THAT(page, !Contains("<i>good"));
}

TEST_CASE("html report: self-contained, nothing loaded from elsewhere") {
  const std::string page = page_with_log();
  CHECK_THAT(page, Contains("<!DOCTYPE html>"));
  CHECK_THAT(page, !Contains("<script"));
  CHECK_THAT(page, !Contains("src="));
  CHECK_THAT(page, !Contains("href="));
  CHECK_THAT(page, !Contains("@import"));
  CHECK_THAT(page, !Contains("url("));
}

TEST_CASE("html report: a chart per round figure, drawn from the report") {
  const std::string page = page_with_log();
  for (const char* id : {"chart-actions", "chart-active", "chart-tokens", "chart-cost", "chart-latency"})
    CHECK_THAT(page, Contains(std::string("<figure class=\"chart\" id=\"") + id + "\">"));
  SECTION("actions by kind: one bar a kind a round it was taken, stacked") {
    const std::string actions = between(page, "id=\"chart-actions\"", "</figure>");
    CHECK(occurrences(actions, "<rect class=\"bar\"") == 4);  // post in rounds 1-2, repost in 2-3
    CHECK_THAT(actions, Contains("<title>round 2, repost: 3</title>"));
    CHECK_THAT(actions, Contains("<li><span class=\"swatch\" style=\"background:#4e79a7\"></span>repost</li>"));
  }
  SECTION("active agents split into answered and failed") {
    const std::string active = between(page, "id=\"chart-active\"", "</figure>");
    CHECK_THAT(active, Contains("<title>round 1, answered: 5</title>"));
    CHECK_THAT(active, Contains("<title>round 1, failed: 1</title>"));
  }
  SECTION("tokens, cost and latency with their units") {
    CHECK_THAT(between(page, "id=\"chart-tokens\"", "</figure>"), Contains("<title>round 3, input: 1,233,737</title>"));
    CHECK_THAT(between(page, "id=\"chart-cost\"", "</figure>"), Contains("<title>round 3, cost: $0.335</title>"));
    const std::string latency = between(page, "id=\"chart-latency\"", "</figure>");
    CHECK(occurrences(latency, "<polyline class=\"line\"") == 2);
    CHECK_THAT(latency, Contains("<title>round 1, p99: 120,000</title>"));
  }
}

TEST_CASE("html report: totals and errors by type") {
  const std::string page = page_with_log();
  const std::string totals = between(page, "id=\"totals-table\"", "</table>");
  CHECK_THAT(totals, Contains("<th scope=\"row\">input tokens</th><td class=\"n\">1,234,567</td>"));
  CHECK_THAT(totals, Contains("<th scope=\"row\">cost</th><td class=\"n\">$1.23</td>"));
  CHECK_THAT(totals, Contains("<th scope=\"row\">refused actions</th><td class=\"n\">1</td>"));
  CHECK_THAT(
      between(page, "id=\"errors-table\"", "</table>"),
      Contains("<tr><td>timeout</td><td class=\"n\">1</td><td>no answer in 120 s &lt;b&gt;late&lt;/b&gt;</td></tr>"));
  CHECK_THAT(between(page, "id=\"refusals-table\"", "</table>"), Contains("<td>like: no_such_post</td>"));
}

TEST_CASE("html report: the spread table, a row a post, most reposted first") {
  const std::string page = page_with_log();
  const std::string table = between(page, "id=\"spread-table\"", "</table>");
  CHECK(occurrences(table, "<tr>") == 4);  // the header and three posts
  CHECK_THAT(table, Contains("<tr><td class=\"n\">1</td><td>p1</td><td>a-1</td><td class=\"n\">1</td>"
                             "<td class=\"n\">4</td><td class=\"n\">4</td><td>2: 2, 3: 2</td></tr>"));
  CHECK_THAT(table, Contains("<td>op1</td><td>@operator</td>"));
  CHECK_THAT(page, Contains("<tr><td class=\"n\">3</td><td>a-3</td><td>a-6</td></tr>"));
  CHECK(occurrences(between(page, "id=\"chart-spread\"", "</figure>"), "<polyline") == 3);
}

TEST_CASE("html report: interviews, interventions, and the figures of each round") {
  const std::string page = page_with_log();
  CHECK_THAT(page, Contains("<h3>Step 3, after round 2</h3>"));
  CHECK_THAT(page, Contains("<p>Answered: 1, failed: 1.</p>"));
  CHECK_THAT(page, Contains("<td class=\"error\">rate_limited: 429 from the model</td>"));
  CHECK_THAT(page, Contains("<td><code>{&quot;id&quot;:&quot;op1&quot;}</code></td>"));
  CHECK_THAT(page, Contains("<th>posts</th>"));  // the world's own figure as a column
}

TEST_CASE("html report: without an event log the page says what it cannot show") {
  const std::string page = html_report(testing::small_run_report(), nullptr);
  CHECK_THAT(page, Contains("The run kept no event log"));
  CHECK_THAT(page, Contains("id=\"chart-actions\""));
}

TEST_CASE("html report: a run with no rounds draws empty charts") {
  scenario_report r;
  r.name = "empty";
  const std::string page = html_report(r, nullptr);
  CHECK(occurrences(page, "No rounds ran.") == 5);
  CHECK_THAT(page, !Contains("<svg"));
}

TEST_CASE("html report: written to a file") {
  const std::string out = "troupe-html-report-test.html";
  write_html_report(testing::small_run_report(), testing::small_run_log(), out);
  std::stringstream written;
  written << std::ifstream(out).rdbuf();
  std::remove(out.c_str());
  CHECK(written.str() == page_with_log());
  SECTION("a place it cannot write is an error naming it") {
    CHECK_THROWS_MATCHES(write_html_report(testing::small_run_report(), "", "/nonexistent/dir/r.html"), report_error,
                         Catch::Message("cannot write the report /nonexistent/dir/r.html"));
  }
}
