// The built-in social world: each action's check (refusals by type, ids
// from the key alone) and effect, feeds (order, bound, since the last
// activation), apply's order and skips, reached(), figures, and the bytes
// an observation renders.

#include "world/social_world.hpp"

#include "json/json_text.hpp"
#include "runtime/tools/tool.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <thread>

using namespace troupe;

namespace {

world_spec spec_with(std::size_t feed_size = 10, std::size_t inbox_size = 10) {
  world_spec s;
  s.channels = {{"news", "What happens"}, {"cats", ""}};
  s.feed_size = feed_size;
  s.inbox_size = inbox_size;
  return s;
}

std::vector<std::string> ids(std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back("a" + std::to_string(i));
  return out;
}

world_action act(std::int64_t round, std::uint32_t agent, std::uint32_t seq, std::string name,
                 boost::json::object arguments = {}) {
  return {round, {agent, seq}, std::move(name), std::move(arguments), nullptr};
}

// A world of n agents ("a0".."a{n-1}") with no graph, where a1..a{n-1}
// follow a0 after round 1 (which activates no one).
struct fixture {
  social_world w;
  std::int64_t round = 1;
  explicit fixture(std::size_t n = 5, world_spec spec = spec_with()) : w(std::move(spec), 7) {
    w.populate(ids(n));
    std::vector<world_action> follows;
    for (std::uint32_t a = 1; a < n; ++a) follows.push_back(act(1, a, 0, "follow", {{"agent", "a0"}}));
    w.apply(1, {}, follows);
    // Everyone has seen the follows: observations start empty.
    std::vector<std::uint32_t> all;
    for (std::uint32_t a = 0; a < n; ++a) all.push_back(a);
    w.apply(2, all, {});
    round = 3;
  }
  // Checks every action as the runner does (refusals throw), then applies them.
  void run(const std::vector<world_action>& actions, const std::vector<std::uint32_t>& activated = {}) {
    for (const auto& a : actions) REQUIRE_NOTHROW(w.check(a));
    w.apply(round, activated, actions);
    ++round;
  }
  world_action make(std::uint32_t agent, std::uint32_t seq, std::string name, boost::json::object args = {}) {
    return act(round, agent, seq, std::move(name), std::move(args));
  }
  std::string refusal(const world_action& a) {
    try {
      w.check(a);
    } catch (const tool_failure& f) {
      return f.type;
    }
    return "accepted";
  }
  std::vector<std::string> feed_ids(std::uint32_t agent) {
    std::vector<std::string> out;
    const auto o = w.observe(agent, round);
    if (const auto* feed = o.data.if_contains("feed"))
      for (const auto& item : feed->as_array()) out.emplace_back(item.at("id").as_string());
    return out;
  }
};

}  // namespace

TEST_CASE("social world: the actions are tools with strict schemas") {
  social_world w(spec_with(), 1);
  const auto tools = w.actions();
  std::vector<std::string> names;
  for (const auto& t : tools) {
    names.push_back(t.name);
    CHECK(t.parameters.at("additionalProperties") == false);
    CHECK(t.parameters.at("type") == "object");
    CHECK_FALSE(t.description.empty());
  }
  CHECK(names == std::vector<std::string>{"post", "reply", "repost", "like", "follow", "unfollow", "send_message",
                                          "do_nothing"});
  const auto& channel = tools[0].parameters.at("properties").at("channel").as_object();
  CHECK(json_text(channel.at("enum")) == R"(["news","cats"])");
  CHECK(json_text(tools[0].parameters.at("required")) == R"(["text"])");
  SECTION("without channels a post has no channel argument") {
    social_world plain(world_spec{}, 1);
    CHECK_FALSE(plain.actions()[0].parameters.at("properties").as_object().contains("channel"));
  }
}

TEST_CASE("social world: check answers ids made of the round and the key alone") {
  fixture f;
  CHECK(json_text(f.w.check(f.make(2, 1, "post", {{"text", "hi"}}))) == R"({"post_id":"p3.2.1"})");
  CHECK(json_text(f.w.check(act(3, operator_agent, 0, "post", {{"text", "hi"}}))) == R"({"post_id":"p3.op.0"})");
  CHECK(json_text(f.w.check(f.make(2, 4, "send_message", {{"to", "a1"}, {"text", "yo"}}))) ==
        R"({"message_id":"m3.2.4"})");
  f.run({f.make(0, 0, "post", {{"text", "first"}})});
  CHECK(json_text(f.w.check(f.make(1, 0, "reply", {{"post_id", "p3.0.0"}, {"text", "ok"}}))) ==
        R"({"post_id":"p4.1.0","reply_to":"p3.0.0"})");
  CHECK(json_text(f.w.check(f.make(1, 0, "repost", {{"post_id", "p3.0.0"}}))) ==
        R"({"post_id":"p4.1.0","repost_of":"p3.0.0"})");
  CHECK(json_text(f.w.check(f.make(1, 0, "like", {{"post_id", "p3.0.0"}}))) == R"({"liked":"p3.0.0"})");
  CHECK(json_text(f.w.check(f.make(0, 0, "follow", {{"agent", "a1"}}))) == R"({"following":"a1"})");
  CHECK(json_text(f.w.check(f.make(1, 0, "unfollow", {{"agent", "a0"}}))) == R"({"unfollowed":"a0"})");
  CHECK(json_text(f.w.check(f.make(1, 0, "do_nothing"))) == R"({"ok":true})");
}

TEST_CASE("social world: check refuses with a typed tool_failure") {
  fixture f;
  f.run({f.make(0, 0, "post", {{"text", "first"}})});
  f.run({f.make(1, 0, "like", {{"post_id", "p3.0.0"}}), f.make(2, 0, "repost", {{"post_id", "p3.0.0"}})});
  SECTION("posts") {
    CHECK(f.refusal(f.make(1, 0, "like", {{"post_id", "p9.0.0"}})) == "unknown_post");
    CHECK(f.refusal(f.make(1, 0, "like", {{"post_id", "nonsense"}})) == "unknown_post");
    CHECK(f.refusal(f.make(1, 0, "reply", {{"post_id", "p3.9.0"}, {"text", "x"}})) == "unknown_post");
    CHECK(f.refusal(f.make(1, 0, "like", {{"post_id", "p3.0.0"}})) == "already_liked");
    CHECK(f.refusal(f.make(2, 0, "repost", {{"post_id", "p3.0.0"}})) == "already_reposted");
    CHECK(f.refusal(f.make(2, 0, "repost", {{"post_id", "p4.2.0"}})) == "already_reposted");  // same root
    CHECK(f.refusal(f.make(1, 0, "post", {{"text", "x"}, {"channel", "dogs"}})) == "unknown_channel");
    CHECK(f.refusal(f.make(1, 0, "post", {{"text", ""}})) == "empty_text");
    CHECK(f.refusal(f.make(1, 0, "post", {{"text", std::string(2'001, 'x')}})) == "text_too_long");
    CHECK(f.refusal(f.make(1, 0, "post", {{"text", std::string(2'000, 'x')}})) == "accepted");
    std::string accents;
    for (int i = 0; i < 2'000; ++i) accents += "\xc3\xa9";  // é: characters are counted, not bytes
    CHECK(f.refusal(f.make(1, 0, "post", {{"text", accents}})) == "accepted");
    CHECK(f.refusal(f.make(1, 0, "post", {{"text", accents + "\xc3\xa9"}})) == "text_too_long");
  }
  SECTION("agents") {
    CHECK(f.refusal(f.make(1, 0, "follow", {{"agent", "zed"}})) == "unknown_agent");
    CHECK(f.refusal(f.make(1, 0, "follow", {{"agent", "a1"}})) == "self_follow");
    CHECK(f.refusal(f.make(1, 0, "follow", {{"agent", "a0"}})) == "already_following");
    CHECK(f.refusal(f.make(0, 0, "unfollow", {{"agent", "a1"}})) == "not_following");
    CHECK(f.refusal(f.make(1, 0, "send_message", {{"to", "a1"}, {"text", "me"}})) == "self_message");
    CHECK(f.refusal(f.make(1, 0, "send_message", {{"to", "nobody"}, {"text", "hi"}})) == "unknown_agent");
    CHECK(f.refusal(act(f.round, operator_agent, 0, "follow", {{"agent", "a1"}})) == "not_for_operator");
  }
  SECTION("arguments") {
    CHECK(f.refusal(f.make(1, 0, "post", {{"text", "x"}, {"mood", "glad"}})) == "invalid_arguments");
    CHECK(f.refusal(f.make(1, 0, "post", {})) == "invalid_arguments");
    CHECK(f.refusal(f.make(1, 0, "post", {{"text", 3}})) == "invalid_arguments");
    CHECK(f.refusal(f.make(1, 0, "do_nothing", {{"why", "tired"}})) == "invalid_arguments");
    CHECK(f.refusal(f.make(1, 0, "dance")) == "unknown_action");
  }
  SECTION("the refusals are counted in the next round's figures") {
    f.refusal(f.make(1, 0, "dance"));
    f.refusal(f.make(1, 0, "dance"));
    f.run({});
    CHECK(f.w.round_figures().at("refused") == 2);
  }
}

TEST_CASE("social world: check reads the round's start, not the round's own actions") {
  fixture f;
  const auto post = f.make(0, 0, "post", {{"text", "new"}});
  CHECK(json_text(f.w.check(post)) == R"({"post_id":"p3.0.0"})");
  CHECK(f.refusal(f.make(1, 0, "like", {{"post_id", "p3.0.0"}})) == "unknown_post");
}

TEST_CASE("social world: a post reaches its author's followers, and no one else") {
  fixture f;
  f.run({f.make(0, 0, "post", {{"text", "from a0"}}), f.make(1, 0, "post", {{"text", "from a1"}})});
  CHECK(f.feed_ids(1) == std::vector<std::string>{"p3.0.0"});
  CHECK(f.feed_ids(4) == std::vector<std::string>{"p3.0.0"});
  CHECK(f.feed_ids(0).empty());  // a0 follows no one, and its own post is not in its feed
  CHECK(f.w.round_figures().at("feed_deliveries") == 4);
  CHECK(f.w.reached() == std::vector<std::uint32_t>{1, 2, 3, 4});
}

TEST_CASE("social world: a channel post reaches the subscribers too, once each") {
  fixture f;
  // The subscriptions a group declares are made before round 1; a world
  // after round 1 accepts them the same.
  f.w.subscribe(0, "news");
  f.w.subscribe(2, "news");
  f.w.subscribe(3, "cats");
  CHECK_THROWS_AS(f.w.subscribe(0, "dogs"), world_error);
  f.run({f.make(1, 0, "post", {{"text", "breaking"}, {"channel", "news"}})});
  CHECK(f.feed_ids(0) == std::vector<std::string>{"p3.1.0"});
  CHECK(f.feed_ids(2) == std::vector<std::string>{"p3.1.0"});
  CHECK(f.feed_ids(3).empty());
  f.run({f.make(0, 0, "post", {{"text", "story"}, {"channel", "news"}})});
  CHECK(f.w.round_figures().at("feed_deliveries") == 4);  // a2 follows and subscribes: once
  CHECK(f.w.observe(2, f.round).data.at("feed").as_array()[0].at("channel") == "news");
}

TEST_CASE("social world: a reply reaches the replier's followers and the author answered") {
  fixture f;
  f.run({f.make(0, 0, "post", {{"text", "question"}})});
  f.w.apply(f.round++, {0, 1, 2, 3, 4}, {});  // everyone saw it
  f.run({f.make(3, 0, "reply", {{"post_id", "p3.0.0"}, {"text", "answer"}})});
  CHECK(f.feed_ids(0) == std::vector<std::string>{"p5.3.0"});
  CHECK(f.feed_ids(1).empty());  // a1 does not follow a3
  const auto item = f.w.observe(0, f.round).data.at("feed").as_array()[0].as_object();
  CHECK(item.at("reply_to") == "p3.0.0");
  CHECK(f.w.find_post("p3.0.0")->replies == 1);
}

TEST_CASE("social world: a repost carries the original, counts on it, and records the spread") {
  fixture f(6);
  f.run({f.make(0, 0, "post", {{"text", "original"}}), f.make(5, 0, "follow", {{"agent", "a1"}})});
  f.run({f.make(1, 0, "repost", {{"post_id", "p3.0.0"}})});
  // a5 follows a0 and a1: it got the original and a1's repost.
  CHECK(f.feed_ids(5) == std::vector<std::string>{"p4.1.0", "p3.0.0"});
  const auto repost = f.w.observe(5, f.round).data.at("feed").as_array()[0].as_object();
  CHECK(repost.at("repost_of") == "p3.0.0");
  CHECK(repost.at("original_author") == "a0");
  CHECK(repost.at("text") == "original");
  f.run({f.make(2, 0, "like", {{"post_id", "p4.1.0"}}), f.make(5, 0, "repost", {{"post_id", "p4.1.0"}})});
  const auto original = *f.w.find_post("p3.0.0");
  CHECK(original.reposts == 2);
  CHECK(original.likes == 1);  // liked through the repost
  const auto cascade = f.w.cascade("p4.1.0");
  REQUIRE(cascade.size() == 3);
  CHECK(cascade[0].id == "p3.0.0");
  CHECK(cascade[1].id == "p4.1.0");
  CHECK(cascade[1].parent == "p3.0.0");
  CHECK(cascade[2].id == "p5.5.0");
  CHECK(cascade[2].parent == "p4.1.0");  // reposted from a1's repost
  CHECK(cascade[2].root == "p3.0.0");
}

TEST_CASE("social world: a feed is newest first and keeps feed_size posts") {
  fixture f(3, spec_with(3));
  f.run({f.make(0, 0, "post", {{"text", "1"}}), f.make(0, 1, "post", {{"text", "2"}})});
  f.run({f.make(0, 0, "post", {{"text", "3"}}), f.make(0, 1, "post", {{"text", "4"}}),
         f.make(0, 2, "post", {{"text", "5"}})});
  CHECK(f.feed_ids(1) == std::vector<std::string>{"p4.0.2", "p4.0.1", "p4.0.0"});
  const auto o = f.w.observe(1, f.round);
  CHECK(o.data.at("feed_new") == 5);
  CHECK(o.text.find("Feed, newest first (3 of 5 new):") != std::string::npos);
}

TEST_CASE("social world: an observation holds what reached the agent since its last activation") {
  fixture f;
  f.run({f.make(0, 0, "post", {{"text", "one"}})});
  SECTION("an agent not activated keeps gathering") {
    f.run({f.make(0, 0, "post", {{"text", "two"}})}, {2});
    CHECK(f.feed_ids(1) == std::vector<std::string>{"p4.0.0", "p3.0.0"});
  }
  SECTION("an activated agent saw the round's start; what came in its round is new") {
    f.run({f.make(0, 0, "post", {{"text", "two"}})}, {1});
    CHECK(f.feed_ids(1) == std::vector<std::string>{"p4.0.0"});
    f.run({}, {1});
    const auto o = f.w.observe(1, f.round);
    CHECK(o.empty);
    CHECK(o.text.empty());
    CHECK(o.data.empty());
  }
}

TEST_CASE("social world: a message reaches its recipient's inbox, newest first, bounded") {
  fixture f(5, spec_with(10, 2));
  f.run({f.make(1, 0, "send_message", {{"to", "a3"}, {"text", "hi"}}),
         f.make(2, 0, "send_message", {{"to", "a3"}, {"text", "hey"}}),
         f.make(4, 0, "send_message", {{"to", "a3"}, {"text", "yo"}})});
  const auto o = f.w.observe(3, f.round);
  const auto& messages = o.data.at("messages").as_array();
  REQUIRE(messages.size() == 2);
  CHECK(json_text(messages[0]) == R"({"id":"m3.4.0","from":"a4","text":"yo"})");
  CHECK(messages[1].at("from") == "a2");
  CHECK(o.data.at("messages_new") == 3);
  CHECK(f.w.reached() == std::vector<std::uint32_t>{3});
  CHECK(f.w.round_figures().at("messages_delivered") == 3);
}

TEST_CASE("social world: follow brings the followee's posts and a new-follower note; unfollow stops them") {
  fixture f;
  f.run({f.make(0, 0, "follow", {{"agent", "a2"}})});
  CHECK(f.w.observe(2, f.round).data.at("new_followers").as_array() == boost::json::array{"a0"});
  CHECK(f.w.reached() == std::vector<std::uint32_t>{2});
  f.run({f.make(2, 0, "post", {{"text", "for a0"}})}, {0});
  CHECK(f.feed_ids(0) == std::vector<std::string>{"p4.2.0"});
  f.run({f.make(0, 0, "unfollow", {{"agent", "a2"}})}, {0});
  f.run({f.make(2, 0, "post", {{"text", "not for a0"}})});
  CHECK(f.feed_ids(0).empty());
}

TEST_CASE("social world: the operator's post outside a channel reaches every agent") {
  fixture f;
  f.run({act(f.round, operator_agent, 0, "post", {{"text", "announcement"}})});
  CHECK(f.w.reached() == std::vector<std::uint32_t>{0, 1, 2, 3, 4});
  CHECK(f.w.observe(0, f.round).data.at("feed").as_array()[0].at("author") == "operator");
}

TEST_CASE("social world: apply skips an action an earlier one of the round made invalid") {
  fixture f;
  f.run({f.make(0, 0, "post", {{"text", "likeable"}})});
  // Both pass check (neither like exists at the round's start).
  const auto first = f.make(1, 0, "like", {{"post_id", "p3.0.0"}});
  const auto second = f.make(1, 1, "like", {{"post_id", "p3.0.0"}});
  const auto follow = f.make(2, 0, "follow", {{"agent", "a4"}});
  const auto again = f.make(2, 1, "follow", {{"agent", "a4"}});
  f.run({first, second, follow, again});
  CHECK(f.w.find_post("p3.0.0")->likes == 1);
  const auto figures = f.w.round_figures();
  CHECK(figures.at("like") == 1);
  CHECK(figures.at("follow") == 1);
  CHECK(figures.at("skipped") == 2);
  CHECK(figures.at("applied") == 2);
  CHECK(f.refusal(f.make(1, 0, "like", {{"post_id", "p3.0.0"}})) == "already_liked");
}

TEST_CASE("social world: round figures count what was applied, by kind") {
  fixture f;
  f.run({f.make(0, 0, "post", {{"text", "x"}}), f.make(1, 0, "do_nothing"),
         f.make(2, 0, "send_message", {{"to", "a0"}, {"text", "m"}})});
  CHECK(json_text(f.w.round_figures()) ==
        R"({"round":3,"applied":3,"skipped":0,"refused":0,"post":1,"reply":0,"repost":0,"like":0,"follow":0,)"
        R"("unfollow":0,"send_message":1,"do_nothing":1,"posts_total":1,"messages_total":1,"follows_total":4,)"
        R"("feed_deliveries":4,"messages_delivered":1,"reached":5})");
  f.run({f.make(1, 0, "do_nothing")});
  CHECK(f.w.reached().empty());
}

TEST_CASE("social world: the same actions render the same observation, to the byte") {
  auto play = [] {
    auto f = std::make_unique<fixture>();
    f->w.subscribe(3, "news");
    f->run({f->make(0, 0, "post", {{"text", "Hello \"world\"\nline two"}}), f->make(1, 0, "follow", {{"agent", "a3"}}),
            f->make(2, 0, "post", {{"text", "news!"}, {"channel", "news"}}),
            f->make(3, 0, "follow", {{"agent", "a1"}})});
    f->run({f->make(0, 0, "reply", {{"post_id", "p3.2.0"}, {"text", "re"}}),
            f->make(1, 0, "repost", {{"post_id", "p3.0.0"}}), f->make(2, 0, "like", {{"post_id", "p3.0.0"}}),
            f->make(4, 0, "send_message", {{"to", "a3"}, {"text", "psst"}})});
    return f;
  };
  const auto a = play();
  const auto b = play();
  for (std::uint32_t agent = 0; agent < 5; ++agent) {
    CHECK(a->w.observe(agent, 5).text == b->w.observe(agent, 5).text);
    CHECK(json_text(a->w.observe(agent, 5).data) == json_text(b->w.observe(agent, 5).data));
  }
  CHECK(a->w.observe(3, 5).text ==
        "Round 5. What reached you since you last acted:\n"
        "Feed, newest first (4 new):\n"
        "- p4.1.0 by a1, reposting p3.0.0 by a0: \"Hello \\\"world\\\"\\nline two\" (likes 1, reposts 1, replies 0)\n"
        "- p4.0.0 by a0, replying to p3.2.0 by a2: \"re\" (likes 0, reposts 0, replies 0)\n"
        "- p3.2.0 by a2 in #news: \"news!\" (likes 0, reposts 0, replies 1)\n"
        "- p3.0.0 by a0: \"Hello \\\"world\\\"\\nline two\" (likes 1, reposts 1, replies 0)\n"
        "Messages, newest first (1 new):\n"
        "- m4.4.0 from a4: \"psst\"\n"
        "New followers, newest first (1 new):\n"
        "- a1\n");
}

TEST_CASE("social world: apply refuses a broken contract") {
  fixture f;
  CHECK_THROWS_AS(f.w.apply(2, {}, {}), std::invalid_argument);  // round 2 is past
  CHECK_THROWS_AS(f.w.apply(3, {}, {act(3, 1, 0, "do_nothing"), act(3, 0, 0, "do_nothing")}), std::invalid_argument);
  CHECK_THROWS_AS(f.w.apply(3, {}, {act(4, 0, 0, "do_nothing")}), std::invalid_argument);
  CHECK_THROWS_AS(f.w.apply(3, {9}, {}), std::invalid_argument);
  CHECK_NOTHROW(f.w.apply(3, {}, {act(3, 0, 0, "do_nothing"), act(3, 0, 1, "do_nothing")}));
}

TEST_CASE("social world: observe and check from many threads read what one thread reads") {
  world_spec spec = spec_with();
  spec.graph.kind = graph_kind::barabasi_albert;
  spec.graph.m = 3;
  social_world w(spec, 11);
  w.populate(ids(2'000));
  std::vector<world_action> posts;
  for (std::uint32_t a = 0; a < 2'000; a += 3)
    posts.push_back(act(1, a, 0, "post", {{"text", "p" + std::to_string(a)}}));
  w.apply(1, {}, posts);
  std::vector<world_action> likes;
  for (std::uint32_t a = 0; a < 2'000; ++a) likes.push_back(act(2, a, 0, "like", {{"post_id", "p1.0.0"}}));
  std::vector<std::string> alone(2'000);
  for (std::uint32_t a = 0; a < 2'000; ++a) alone[a] = w.observe(a, 2).text + json_text(w.check(likes[a]));
  std::vector<std::string> together(2'000);
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::uint32_t a = t; a < 2'000; a += 4) together[a] = w.observe(a, 2).text + json_text(w.check(likes[a]));
    });
  for (auto& t : threads) t.join();
  CHECK(together == alone);
}
