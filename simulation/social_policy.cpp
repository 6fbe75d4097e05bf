#include "simulation/run_scenario.hpp"

#include "world/seeded_random.hpp"

namespace troupe {

namespace json = boost::json;

namespace {

constexpr std::uint64_t policy_salt = 0x706f6c696379ULL;  // "policy"

// The ids of the posts an observation shows, newest first.
std::vector<std::string> observed_posts(const json::object& observation) {
  std::vector<std::string> out;
  if (const auto* feed = observation.if_contains("feed"); feed && feed->is_array())
    for (const auto& p : feed->as_array())
      if (const auto* id = p.as_object().if_contains("id"); id && id->is_string()) out.emplace_back(id->as_string());
  return out;
}

std::vector<std::string> observed_people(const json::object& observation) {
  std::vector<std::string> out;
  auto add = [&](const json::value& who) {
    // The operator speaks in the world but is no one to follow or write to.
    if (who.is_string() && who.as_string() != "operator") out.emplace_back(who.as_string());
  };
  auto each = [&](const char* list, const char* field) {
    if (const auto* xs = observation.if_contains(list); xs && xs->is_array())
      for (const auto& x : xs->as_array()) {
        if (!field)
          add(x);
        else if (const auto* who = x.is_object() ? x.as_object().if_contains(field) : nullptr)
          add(*who);
      }
  };
  each("messages", "from");
  each("feed", "author");
  each("new_followers", nullptr);
  return out;
}

}  // namespace

std::vector<policy_action> social_policy(const policy_input& in) {
  const auto& weights = in.weights->weights;
  double total = 0;
  for (const auto& [name, w] : weights) total += w;
  if (total <= 0) return {};
  std::uint64_t draw = draw64(in.seed ^ policy_salt, static_cast<std::uint64_t>(in.round), in.agent);
  double pick = unit_draw(draw) * total;
  std::string choice = weights.rbegin()->first;
  for (const auto& [name, w] : weights) {
    if (pick < w) {
      choice = name;
      break;
    }
    pick -= w;
  }
  const auto next = [&] { return draw = mix64(draw); };
  const auto posts = observed_posts(*in.observation);
  const auto people = observed_people(*in.observation);
  const std::string text = "Thoughts of " + *in.agent_id + " in round " + std::to_string(in.round) + ".";
  auto someone = [&]() -> std::string {
    if (!people.empty()) return people[bounded_draw(next(), people.size())];
    if (in.agent_ids->size() < 2) return "";
    return (*in.agent_ids)[bounded_draw(next(), in.agent_ids->size())];
  };
  const bool needs_post = choice == "like" || choice == "repost" || choice == "reply";
  if (needs_post && posts.empty()) choice = weights.count("post") ? "post" : "do_nothing";
  if (choice == "post") return {{"post", json::object{{"text", text}}}};
  if (choice == "do_nothing") return {{"do_nothing", json::object{}}};
  if (needs_post) {
    const std::string& id = posts[bounded_draw(next(), posts.size())];
    if (choice == "reply") return {{"reply", json::object{{"post_id", id}, {"text", "Re: " + text}}}};
    return {{choice, json::object{{"post_id", id}}}};
  }
  std::string who = someone();
  if (who.empty() || who == *in.agent_id) return {{"do_nothing", json::object{}}};
  if (choice == "send_message")
    return {{"send_message", json::object{{"to", who}, {"text", "Hello from " + *in.agent_id}}}};
  if (choice == "follow" || choice == "unfollow") return {{choice, json::object{{"agent", who}}}};
  return {{"do_nothing", json::object{}}};
}

}  // namespace troupe
