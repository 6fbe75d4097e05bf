// troupe simulate --scenario, as a user runs it: the example scenarios, the
// estimate, and the errors a scenario file or the flags can give.

#include "support/troupe_command.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace json = boost::json;
using troupe::testing::run_result;
using troupe::testing::run_troupe;

namespace {

std::string example(const std::string& name) { return std::string(TROUPE_EXAMPLES_DIR) + "/scenarios/" + name; }

struct temp_file {
  std::filesystem::path path;
  temp_file(const std::string& name, const std::string& text) : path(std::filesystem::temp_directory_path() / name) {
    std::ofstream(path) << text;
  }
  ~temp_file() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("simulate --scenario runs each example scenario to its end") {
  for (const char* name : {"social.toml", "town_hall.toml"}) {
    const run_result r = run_troupe("simulate --scenario " + example(name) + " --json");
    INFO(name << ": " << r.out);
    REQUIRE(r.exit_code == 0);
    const json::value v = json::parse(r.out);
    CHECK(v.at("activations").to_number<std::int64_t>() > 0);
    CHECK(v.at("activations_failed") == 0);
    CHECK(v.at("stopped") == false);
    CHECK(v.at("per_round").as_array().size() == static_cast<std::size_t>(v.at("rounds").to_number<std::int64_t>()));
  }
}

TEST_CASE("simulate --scenario --estimate prints what a run will take and runs nothing") {
  const run_result r = run_troupe("simulate --scenario " + example("social.toml") + " --estimate --json");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const json::value v = json::parse(r.out);
  CHECK(v.as_object().contains("groups"));
}

TEST_CASE("simulate --scenario refuses what it cannot run, saying why") {
  SECTION("a misspelt key, by its name and line") {
    temp_file f("troupe-typo.toml", "name = \"x\"\n[[population]]\nname = \"a\"\ncont = 3\n");
    const run_result r = run_troupe("simulate --scenario " + f.path.string(), true);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("cont (line 4) is not a known field") && Catch::Contains(":4)"));
  }
  SECTION("a world nobody registered") {
    temp_file f("troupe-world.toml",
                "name = \"x\"\n[world]\nkind = \"mars\"\n[[population]]\nname = \"a\"\ncount = 2\n"
                "actions = [\"walk\"]\n");
    const run_result r = run_troupe("simulate --scenario " + f.path.string(), true);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("mars"));
  }
  SECTION("a group that names a model when the run has none") {
    temp_file f("troupe-model.toml",
                "name = \"x\"\n[[population]]\nname = \"a\"\ncount = 2\nmodel = \"gpt-4o-mini\"\n");
    const run_result r = run_troupe("simulate --scenario " + f.path.string(), true);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("gpt-4o-mini"));
  }
  SECTION("--resume without a durable store") {
    const run_result r = run_troupe("simulate --scenario " + example("social.toml") + " --resume", true);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("durable store"));
  }
  SECTION("neither a scenario nor a load run") {
    const run_result r = run_troupe("simulate", true);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.out, Catch::Contains("--scenario"));
  }
}
