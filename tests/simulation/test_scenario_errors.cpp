// A scenario file that cannot be run is refused with a scenario_error naming
// the dotted key and the line to fix, for every kind of mistake.

#include "simulation/scenario_toml.hpp"

#include <catch2/catch.hpp>

using namespace troupe;

namespace {

const std::string fixtures = std::string(TROUPE_FIXTURES_DIR) + "/simulation";

scenario_error refusal(const std::string& text) {
  try {
    parse_scenario(text, fixtures, "scenario.toml");
  } catch (const scenario_error& e) {
    return e;
  }
  FAIL("accepted:\n" << text);
  throw;
}

// Line 1 and 2, then the caller's lines from line 3 on.
const std::string group = "[[population]]\nname = \"residents\"\ncount = 10\n";

}  // namespace

TEST_CASE("a scenario error's message names the key, then the file and the line") {
  const scenario_error e = refusal(group + "[[population]]\nname = \"visitors\"\ncount = 0\n");
  CHECK(e.key == "population[1].count");
  CHECK(e.line == 6);
  CHECK(e.file == "scenario.toml");
  CHECK(std::string(e.what()) == "population[1].count: must be between 1 and 4294967294 (scenario.toml:6)");
}

TEST_CASE("a scenario file that is not TOML is refused on the line of the mistake") {
  const scenario_error e = refusal(group + "seed = = 3\n");
  CHECK(e.key.empty());
  CHECK(e.line == 4);
  CHECK_THAT(e.what(), Catch::StartsWith("not valid TOML: ") && Catch::EndsWith("(scenario.toml:4)"));
}

TEST_CASE("a scenario file's unknown keys are refused, so that typos do not pass") {
  SECTION("at the top") {
    const scenario_error e = refusal("sede = 3\n" + group);
    CHECK(e.key == "sede");
    CHECK(e.line == 1);
    CHECK_THAT(e.what(), Catch::Contains("is not a known field"));
  }
  SECTION("in a group") {
    const scenario_error e = refusal(group + "cont = 3\n");
    CHECK(e.key == "population[0].cont");
    CHECK(e.line == 4);
  }
  SECTION("in the world, its graph and its channels") {
    CHECK(refusal("[world]\nfeed = 3\n" + group).key == "world.feed");
    CHECK(refusal("[world]\ngraph = { kind = \"barabasi_albert\", p = 0.1 }\n" + group).key == "world.graph.p");
    CHECK(refusal("[world]\nchannels = [{ name = \"a\", desc = \"\" }]\n" + group).key == "world.channels[0].desc");
  }
  SECTION("in the clock") { CHECK(refusal("[clock]\nmod = \"events\"\n" + group).key == "clock.mod"); }
  SECTION("in an endpoint, an intervention, an interview and a price") {
    CHECK(refusal(group + "model = \"m\"\n[[population.endpoints]]\nurl = \"http://h/v1\"\nkey = \"k\"\n").key ==
          "population[0].endpoints[0].key");
    CHECK(refusal(group + "[[workflow]]\ninject = { action = \"post\", who = \"x\" }\n").key ==
          "workflow[0].inject.who");
    CHECK(refusal(group + "[[workflow]]\ninterview = { question = \"q\", size = 2 }\n").key ==
          "workflow[0].interview.size");
    CHECK(refusal(group + "[prices]\nm = { input = 1, ouput = 2 }\n").key == "prices.m.ouput");
  }
}

TEST_CASE("a scenario file's values of the wrong type are refused") {
  SECTION("a string for an integer") {
    const scenario_error e = refusal("seed = \"seven\"\n" + group);
    CHECK(e.key == "seed");
    CHECK_THAT(e.what(), Catch::Contains("must be an integer"));
  }
  SECTION("a number for a string") { CHECK(refusal(group + "model = 4\n").key == "population[0].model"); }
  SECTION("a string for an array") { CHECK(refusal(group + "tools = \"calculator\"\n").key == "population[0].tools"); }
  SECTION("a table where an array of tables goes") {
    CHECK_THAT(refusal("[population]\nname = \"a\"\ncount = 1\n").what(), Catch::Contains("array of tables"));
  }
  SECTION("a string for a number") {
    CHECK(refusal("[clock]\nmode = \"probability\"\nprobability = \"high\"\n" + group).key == "clock.probability");
  }
}

TEST_CASE("a scenario file's values out of range are refused") {
  SECTION("a group of no agents") {
    const scenario_error e = refusal("[[population]]\nname = \"a\"\ncount = 0\n");
    CHECK(e.key == "population[0].count");
    CHECK(e.line == 3);
  }
  SECTION("a group without a count") {
    const scenario_error e = refusal("[[population]]\nname = \"a\"\n");
    CHECK(e.key == "population[0].count");
    CHECK_THAT(e.what(), Catch::Contains("is required"));
    CHECK(e.line == 1);
  }
  SECTION("a probability outside [0, 1]") {
    const scenario_error e = refusal("[clock]\nmode = \"probability\"\nprobability = 1.5\n" + group);
    CHECK(e.key == "clock.probability");
    CHECK(e.line == 3);
    CHECK_THAT(e.what(), Catch::Contains("between 0 and 1"));
    CHECK(refusal("[world]\ngraph = { kind = \"erdos_renyi\", p = -0.1 }\n" + group).key == "world.graph.p");
    CHECK(refusal("[world]\ngraph = { kind = \"watts_strogatz\", k = 2, beta = 2 }\n" + group).key ==
          "world.graph.beta");
  }
  SECTION("an hourly profile of other than 24 numbers") {
    const scenario_error e = refusal("[clock]\nmode = \"probability\"\nhourly = [1, 2, 3]\n" + group);
    CHECK(e.key == "clock.hourly");
    CHECK(e.line == 3);
    CHECK_THAT(e.what(), Catch::Contains("24 numbers") && Catch::Contains("it has 3"));
  }
  SECTION("an hourly profile with a negative weight, named by its hour") {
    const scenario_error e = refusal(
        "[clock]\nmode = \"probability\"\nhourly = [\n1, 1, 1,\n-1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
        "1, 1, 1]\n" +
        group);
    CHECK(e.key == "clock.hourly[3]");
    CHECK(e.line == 5);
  }
  SECTION("an hourly profile of zeros") {
    CHECK_THAT(
        refusal("[clock]\nmode = \"events\"\nhourly = [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]\n" + group)
            .what(),
        Catch::Contains("above 0"));
  }
  SECTION("a probability or an hourly profile for a clock that activates every agent") {
    CHECK(refusal("[clock]\nprobability = 0.5\n" + group).key == "clock.probability");
  }
  SECTION("an odd k for Watts–Strogatz") {
    const scenario_error e = refusal("[world]\ngraph = { kind = \"watts_strogatz\", k = 3 }\n" + group);
    CHECK(e.key == "world.graph.k");
    CHECK(e.line == 2);
    CHECK_THAT(e.what(), Catch::Contains("even"));
  }
  SECTION("a graph that needs more agents than the population has") {
    CHECK_THAT(refusal("[world]\ngraph = { kind = \"barabasi_albert\", m = 10 }\n" + group).what(),
               Catch::StartsWith("world.graph.m: must be less than the number of agents (the population has 10"));
    CHECK(refusal("[world]\ngraph = { kind = \"watts_strogatz\", k = 10 }\n" + group).key == "world.graph.k");
  }
  SECTION("a negative price, a start hour past 23, a timeout of 0") {
    CHECK(refusal(group + "[prices]\nm = { input = -1 }\n").key == "prices.m.input");
    CHECK(refusal("[clock]\nstart_hour = 24\n" + group).key == "clock.start_hour");
    CHECK(refusal("activation_timeout_seconds = 0\n" + group).key == "activation_timeout_seconds");
  }
  SECTION("a policy whose weights are all 0") {
    const scenario_error e = refusal(group + "policy = { post = 0 }\n");
    CHECK(e.key == "population[0].policy");
    CHECK(e.line == 4);
  }
}

TEST_CASE("a scenario file's closed sets are refused outside them") {
  SECTION("an unknown graph kind") {
    const scenario_error e = refusal("[world]\ngraph = { kind = \"small_world\" }\n" + group);
    CHECK(e.key == "world.graph.kind");
    CHECK(e.line == 2);
    CHECK_THAT(e.what(), Catch::Contains("not \"small_world\""));
  }
  SECTION("a graph without a kind") {
    CHECK_THAT(refusal("[world]\ngraph = { m = 3 }\n" + group).what(),
               Catch::StartsWith("world.graph.kind: is required"));
  }
  SECTION("an unknown activation mode") {
    const scenario_error e = refusal("\n[clock]\nmode = \"sometimes\"\n" + group);
    CHECK(e.key == "clock.mode");
    CHECK(e.line == 3);
  }
  SECTION("a workflow step of an unknown kind") {
    const scenario_error e = refusal(group + "[[workflow]]\nrun = 1\n[[workflow]]\nsurvey = \"q\"\n");
    CHECK(e.key == "workflow[1].survey");
    CHECK(e.line == 7);
    CHECK_THAT(e.what(), Catch::Contains("is not a kind of step"));
  }
  SECTION("a workflow step of two kinds, or of none") {
    const scenario_error e = refusal(group + "[[workflow]]\nrun = 1\ncheckpoint = true\n");
    CHECK(e.key == "workflow[0]");
    CHECK(e.line == 4);
    CHECK_THAT(e.what(), Catch::Contains("it has 2"));
    CHECK(refusal("workflow = [{}]\n" + group).key == "workflow[0]");
  }
  SECTION("a checkpoint = false") {
    CHECK(refusal(group + "[[workflow]]\ncheckpoint = false\n").key == "workflow[0].checkpoint");
  }
  SECTION("a run of 0 rounds") { CHECK(refusal(group + "[[workflow]]\nrun = 0\n").key == "workflow[0].run"); }
  SECTION("an unknown context policy") {
    CHECK(refusal(group + "model = \"m\"\ncontext_policy = \"huge\"\n").key == "population[0].context_policy");
  }
}

TEST_CASE("a scenario file's names must refer to what exists") {
  SECTION("two groups of one name") {
    const scenario_error e = refusal(group + group);
    CHECK(e.key == "population[1].name");
    CHECK(e.line == 5);
    CHECK_THAT(e.what(), Catch::Contains("already named residents"));
  }
  SECTION("two channels of one name") {
    CHECK(refusal("[world]\nchannels = [{ name = \"a\" }, { name = \"a\" }]\n" + group).key ==
          "world.channels[1].name");
  }
  SECTION("an action weight naming no action of the social world") {
    const scenario_error e = refusal(group + "policy = { post = 1, pots = 2 }\n");
    CHECK(e.key == "population[0].policy.pots");
    CHECK(e.line == 4);
    CHECK_THAT(e.what(), Catch::Contains("\"pots\" is not an action of the social world (post, reply, repost"));
  }
  SECTION("an action list naming no action of the social world") {
    CHECK(refusal(group + "actions = [\"post\", \"shout\"]\n").key == "population[0].actions");
  }
  SECTION("a weight for an action the group may not take") {
    CHECK(refusal(group + "actions = [\"post\"]\npolicy = { post = 1, like = 1 }\n").key ==
          "population[0].policy.like");
  }
  SECTION("an intervention of no action of the social world") {
    const scenario_error e = refusal(group + "[[workflow]]\ninject = { action = \"shout\" }\n");
    CHECK(e.key == "workflow[0].inject.action");
    CHECK(e.line == 5);
  }
  SECTION("an interview of a group that does not exist") {
    CHECK(refusal(group + "[[workflow]]\ninterview = { question = \"q\", group = \"nobody\" }\n").key ==
          "workflow[0].interview.group");
  }
  SECTION("an interview of more agents than there are") {
    const scenario_error e = refusal(group + "[[workflow]]\ninterview = { question = \"q\", sample = 11 }\n");
    CHECK(e.key == "workflow[0].interview.sample");
    CHECK_THAT(e.what(), Catch::Contains("at most the 10 agents"));
  }
  SECTION("a channel the world does not have") {
    CHECK(refusal(group + "channels = [\"news\"]\n").key == "population[0].channels");
  }
  SECTION("a persona field without a profiles file") {
    const scenario_error e = refusal(group + "persona = \"You are {name}.\"\n");
    CHECK(e.key == "population[0].persona");
    CHECK_THAT(e.what(), Catch::Contains("{name} needs a profiles file"));
  }
  SECTION("a persona field the profiles file's header does not name") {
    const scenario_error e = refusal(group + "profiles = \"people.csv\"\npersona = \"You are {name} from {town}.\"\n");
    CHECK(e.key == "population[0].persona");
    CHECK(e.line == 5);
    CHECK_THAT(e.what(), Catch::Contains("{town} is not a field of people.csv (name, age, city)"));
  }
  SECTION("a persona with a brace left open") {
    CHECK_THAT(refusal(group + "persona = \"You are {id.\"\n").what(),
               Catch::StartsWith("population[0].persona: the brace at 8 is left open"));
  }
}

TEST_CASE("a scenario file's files must be there") {
  SECTION("a profiles file that is missing") {
    const scenario_error e = refusal(group + "profiles = \"nobody.csv\"\n");
    CHECK(e.key == "population[0].profiles");
    CHECK(e.line == 4);
    CHECK_THAT(e.what(), Catch::Contains("no such file: " + fixtures + "/nobody.csv"));
  }
  SECTION("a profiles file of neither CSV nor JSONL") {
    CHECK_THAT(refusal(group + "profiles = \"people.txt\"\n").what(), Catch::Contains(".csv or a .jsonl"));
  }
  SECTION("an edge list that is missing") {
    const scenario_error e = refusal("[world]\ngraph = { kind = \"edge_list\", path = \"nowhere.csv\" }\n" + group);
    CHECK(e.key == "world.graph.path");
    CHECK(e.line == 2);
  }
  SECTION("a scenario file that is missing") {
    try {
      read_scenario(fixtures + "/nowhere.toml");
      FAIL("read a missing file");
    } catch (const scenario_error& e) {
      CHECK(e.line == 0);
      CHECK(std::string(e.what()) == "cannot be read (" + fixtures + "/nowhere.toml)");
    }
  }
}

TEST_CASE("a scenario file without what a run needs is refused") {
  SECTION("no population") { CHECK(refusal("name = \"empty\"\n").key == "population"); }
  SECTION("a group without a name") { CHECK(refusal("[[population]]\ncount = 1\n").key == "population[0].name"); }
  SECTION("endpoints for a scripted group") {
    CHECK(refusal(group + "[[population.endpoints]]\nurl = \"http://h/v1\"\n").key == "population[0].endpoints");
  }
  SECTION("a policy for a model group") {
    CHECK(refusal(group + "model = \"gpt-4o-mini\"\npolicy = { post = 1 }\n").key == "population[0].policy");
  }
  SECTION("an endpoint that is not an HTTP URL") {
    CHECK(refusal(group + "model = \"m\"\n[[population.endpoints]]\nurl = \"h:8000\"\n").key ==
          "population[0].endpoints[0].url");
  }
  SECTION("an interview without a question") {
    CHECK(refusal(group + "[[workflow]]\ninterview = { sample = 3 }\n").key == "workflow[0].interview.question");
  }
  SECTION("an intervention's argument TOML has and JSON has not") {
    const scenario_error e =
        refusal(group + "[[workflow]]\ninject = { action = \"post\", arguments = { at = 1979-05-27 } }\n");
    CHECK(e.key == "workflow[0].inject.arguments.at");
    CHECK_THAT(e.what(), Catch::Contains("dates and times"));
  }
}
