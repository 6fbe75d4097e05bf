#include "json/json_text.hpp"
#include "report_fixture.hpp"
#include "simulation/report_json.hpp"

#include <catch2/catch.hpp>

using namespace troupe;

TEST_CASE("a scenario run's JSON report: its keys in their order, its figures as they are") {
  scenario_report r = testing::small_run_report();
  r.resumed_after = 1;
  r.stopped = true;
  r.finished_before = true;  // not part of the report
  CHECK(json_text(scenario_report_json(r, 4096)) ==
        R"({"name":"town <square>","agents":6,"rounds":3,"resumed_after":1,"activations":13,)"
        R"("activations_failed":1,"errors_by_type":{"timeout":1},"actions":{"post":3,"repost":7},)"
        R"("interviews":2,"input_tokens":1234567,"output_tokens":144,"cost":1.2346,"seconds":4.5,)"
        R"("spawn_seconds":0.25,"activations_per_second":3.25,"peak_rss_bytes":4096,"stopped":true,)"
        R"("per_round":[{"round":1,"hour":8,"active":6,"failed":1,"refused":1,"actions":{"post":2},)"
        R"("input_tokens":470,"output_tokens":72,"cost":0.5,"seconds":1.5,"latency_p50_ms":80.0,)"
        R"("latency_p99_ms":120000.0,"world":{"posts":2}},{"round":2,"hour":9,"active":3,"failed":0,)"
        R"("refused":0,"actions":{"post":1,"repost":3},"input_tokens":360,"output_tokens":36,"cost":0.4,)"
        R"("seconds":1.5,"latency_p50_ms":95.0,"latency_p99_ms":210.0,"world":{"posts":6}},{"round":3,)"
        R"("hour":10,"active":4,"failed":0,"refused":0,"actions":{"repost":4},"input_tokens":1233737,)"
        R"("output_tokens":48,"cost":0.3346,"seconds":1.5,"latency_p50_ms":70.0,"latency_p99_ms":150.0,)"
        R"("world":{"posts":10}}]})");
}
