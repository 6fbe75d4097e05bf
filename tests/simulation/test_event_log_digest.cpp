#include "simulation/event_log_digest.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include <unistd.h>

#include "simulation/report_fixture.hpp"

using namespace troupe;

namespace {

// A log written for one test (ctest runs each in its own process), removed after it.
struct temp_log {
  explicit temp_log(const std::string& text) { std::ofstream(path) << text; }
  ~temp_log() { std::remove(path.c_str()); }
  std::string path = "troupe-digest-test-" + std::to_string(::getpid()) + ".jsonl";
};

const spread_digest* find_post(const event_log_digest& d, const std::string& root) {
  for (const auto& p : d.spread)
    if (p.root == root) return &p;
  return nullptr;
}

}  // namespace

TEST_CASE("event log digest: the run, activations, errors and refusals") {
  const auto d = digest_event_log(testing::small_run_log());
  CHECK(d.name == "town <square>");
  CHECK(d.world == "social");
  CHECK(d.seed == 7);
  CHECK(d.agents == 6);
  CHECK(d.lines == 35);
  CHECK(d.activations == 13);
  CHECK(d.checkpoints == 1);
  SECTION("an activation's error is counted by type with its first message; an observation's own error field is not") {
    REQUIRE(d.activation_errors.size() == 1);
    CHECK(d.activation_errors.at("timeout").count == 1);
    CHECK(d.activation_errors.at("timeout").example == "no answer in 120 s <b>late</b>");
  }
  SECTION("refusals by action and error type") {
    REQUIRE(d.refusals.size() == 1);
    CHECK(d.refusals.at("like: no_such_post") == 1);
  }
}

TEST_CASE("event log digest: interviews by step, answers and errors") {
  const auto d = digest_event_log(testing::small_run_log());
  REQUIRE(d.interviews.size() == 1);
  const auto& iv = d.interviews[0];
  CHECK(iv.step == 3);
  CHECK(iv.round == 2);
  CHECK(iv.question == "What do you think of <b>p1</b>?");
  CHECK(iv.answers == 1);
  CHECK(iv.errors == 1);
  REQUIRE(iv.shown.size() == 2);
  CHECK(iv.shown[0].agent == "a-1");
  CHECK(iv.shown[0].text == "It's \"fine\" & <i>good</i>");
  CHECK(iv.shown[1].error_type == "rate_limited");

  SECTION("only the first answers are kept, the rest counted") {
    digest_limits limits;
    limits.answers_per_interview = 1;
    const auto few = digest_event_log(testing::small_run_log(), limits);
    CHECK(few.interviews[0].shown.size() == 1);
    CHECK(few.interviews[0].answers + few.interviews[0].errors == 2);
  }
}

TEST_CASE("event log digest: interventions") {
  const auto d = digest_event_log(testing::small_run_log());
  REQUIRE(d.interventions.size() == 1);
  CHECK(d.interventions_total == 1);
  CHECK(d.interventions[0].action == "post");
  CHECK(d.interventions[0].as == "@operator");
  CHECK(d.interventions[0].result == "{\"id\":\"op1\"}");
}

TEST_CASE("event log digest: the spread of the most reposted posts") {
  const auto d = digest_event_log(testing::small_run_log());
  CHECK(d.reposts == 7);
  CHECK(d.spread_exact);
  REQUIRE(d.spread.size() == 3);
  SECTION("most reposted first, ties by id") {
    CHECK(d.spread[0].root == "p1");
    CHECK(d.spread[1].root == "p2");
    CHECK(d.spread[2].root == "op1");
  }
  SECTION("a post's author, round, reposts by round and distinct reposters") {
    const auto& p1 = d.spread[0];
    CHECK(p1.author == "a-1");
    CHECK(p1.posted_round == 1);
    CHECK(p1.reposts == 4);
    CHECK(p1.reposters == 4);
    CHECK(p1.per_round == std::map<std::int64_t, std::size_t>{{2, 2}, {3, 2}});
  }
  SECTION("who reposted from whom: a repost of a repost comes from its reposter") {
    const auto& edges = d.spread[0].edges;
    REQUIRE(edges.size() == 4);
    CHECK((edges[0].round == 2 && edges[0].from == "a-1" && edges[0].to == "a-3"));
    CHECK((edges[1].from == "a-1" && edges[1].to == "a-4"));
    CHECK((edges[2].round == 3 && edges[2].from == "a-4" && edges[2].to == "a-2"));
    CHECK((edges[3].from == "a-3" && edges[3].to == "a-6"));
  }
  SECTION("a result without a root: the post reposted is the original") {
    const auto* p2 = find_post(d, "p2");
    REQUIRE(p2);
    CHECK(p2->reposts == 2);
    CHECK(p2->edges.at(0).from == "a-2");
    CHECK(p2->edges.at(0).to == "a-5");
  }
  SECTION("an intervention's post is the operator's") {
    const auto* op = find_post(d, "op1");
    REQUIRE(op);
    CHECK(op->author == "@operator");
    CHECK(op->posted_round == 2);
    CHECK(op->edges.at(0).from == "@operator");
  }
  SECTION("the top posts only, and the first reposts of each") {
    digest_limits limits;
    limits.top_posts = 1;
    limits.reposts_per_post = 2;
    const auto top = digest_event_log(testing::small_run_log(), limits);
    REQUIRE(top.spread.size() == 1);
    CHECK(top.spread[0].reposts == 4);
    CHECK(top.spread[0].edges.size() == 2);
  }
}

TEST_CASE("event log digest: a full candidates' table still finds the most reposted post, with its exact count") {
  digest_limits limits;
  limits.candidate_posts = 1;
  const auto d = digest_event_log(testing::small_run_log(), limits);
  CHECK_FALSE(d.spread_exact);
  CHECK(d.spread_missing_at_most == 3);  // 7 reposts / (1 + 1)
  REQUIRE_FALSE(d.spread.empty());
  CHECK(d.spread[0].root == "p1");
  CHECK(d.spread[0].reposts == 4);
}

TEST_CASE("event log digest: what it cannot read is an error naming the file and line") {
  SECTION("a file that is not there") {
    CHECK_THROWS_MATCHES(digest_event_log("/nonexistent/run.jsonl"), event_log_error,
                         Catch::Message("cannot open the event log /nonexistent/run.jsonl"));
  }
  SECTION("a line that is not JSON") {
    temp_log log("{\"event\":\"run\",\"name\":\"x\"}\n{\"event\":\"interview\",\"step\":\n");
    CHECK_THROWS_WITH(digest_event_log(log.path), Catch::StartsWith("event log " + log.path + ", line 2: not JSON"));
  }
  SECTION("an object without an event name") {
    temp_log log("\n{\"round\":1}\n");
    CHECK_THROWS_WITH(digest_event_log(log.path), "event log " + log.path + ", line 2: no \"event\" name");
  }
}

TEST_CASE("event log digest: an empty log digests to nothing") {
  temp_log log("");
  const auto d = digest_event_log(log.path);
  CHECK(d.lines == 0);
  CHECK(d.spread.empty());
  CHECK(d.interviews.empty());
}
