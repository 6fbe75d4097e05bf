#include "world/social_world.hpp"

#include "json/json_text.hpp"
#include "json/utf8.hpp"
#include "runtime/tools/tool.hpp"
#include "world/seeded_random.hpp"

#include <boost/json/array.hpp>

#include <algorithm>
#include <limits>
#include <tuple>

namespace troupe {

namespace {

enum class action_kind : std::uint8_t { post, reply, repost, like, follow, unfollow, send_message, do_nothing };
constexpr std::size_t action_kinds = 8;
constexpr const char* kind_names[action_kinds] = {"post",   "reply",    "repost",       "like",
                                                  "follow", "unfollow", "send_message", "do_nothing"};

std::optional<action_kind> kind_named(std::string_view name) {
  for (std::size_t i = 0; i < action_kinds; ++i)
    if (name == kind_names[i]) return static_cast<action_kind>(i);
  return std::nullopt;
}

[[noreturn]] void refuse(std::string type, const std::string& message) { throw tool_failure(std::move(type), message); }

// The arguments an action may have: each a string, the required ones
// present, no other. The runtime validates a model's arguments against the
// schema already; an intervention's come from the scenario file unchecked.
void expect_only(const boost::json::object& args, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : args) {
    if (std::find(allowed.begin(), allowed.end(), std::string_view(key)) == allowed.end())
      refuse("invalid_arguments", "unexpected argument `" + std::string(key) + "`");
    if (!value.is_string()) refuse("invalid_arguments", "`" + std::string(key) + "` must be a string");
  }
}

std::optional<std::string_view> optional_string(const boost::json::object& args, std::string_view name) {
  const auto* v = args.if_contains(name);
  if (!v) return std::nullopt;
  return std::string_view(v->get_string());
}

std::string_view required_string(const boost::json::object& args, std::string_view name) {
  const auto s = optional_string(args, name);
  if (!s) refuse("invalid_arguments", "missing argument `" + std::string(name) + "`");
  return *s;
}

std::string_view checked_text(const boost::json::object& args) {
  const std::string_view text = required_string(args, "text");
  if (text.empty()) refuse("empty_text", "`text` is empty");
  if (!is_valid_utf8(text)) refuse("invalid_text", "`text` is not UTF-8");
  const auto code_points = static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
  if (code_points > social_world::max_text)
    refuse("text_too_long", "`text` has " + std::to_string(code_points) + " characters; at most " +
                                std::to_string(social_world::max_text));
  return text;
}

// "p3.12.1" -> {3, 12, 1}; "op" for the operator's index.
struct parsed_id {
  std::uint32_t round, author, seq;
};

std::optional<std::uint32_t> parse_number(std::string_view s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
  return static_cast<std::uint32_t>(v);
}

std::optional<parsed_id> parse_id(std::string_view id, char prefix) {
  if (id.size() < 2 || id.front() != prefix) return std::nullopt;
  id.remove_prefix(1);
  const auto dot1 = id.find('.');
  const auto dot2 = dot1 == std::string_view::npos ? dot1 : id.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos) return std::nullopt;
  const auto round = parse_number(id.substr(0, dot1));
  const std::string_view author_text = id.substr(dot1 + 1, dot2 - dot1 - 1);
  const auto author = author_text == "op" ? std::optional<std::uint32_t>(operator_agent) : parse_number(author_text);
  const auto seq = parse_number(id.substr(dot2 + 1));
  if (!round || !author || !seq) return std::nullopt;
  return parsed_id{*round, *author, *seq};
}

// splitmix64's mixing, for a post's place in the index.
std::uint64_t key_hash(std::uint32_t round, std::uint32_t author, std::uint32_t seq) {
  return seeded_random((std::uint64_t{round} << 32 | author) ^ (std::uint64_t{seq} << 48 | seq)).next();
}

std::string make_id(char prefix, std::uint32_t round, std::uint32_t author, std::uint32_t seq) {
  std::string id(1, prefix);
  id += std::to_string(round);
  id += '.';
  id += author == operator_agent ? std::string("op") : std::to_string(author);
  id += '.';
  id += std::to_string(seq);
  return id;
}

boost::json::object schema(boost::json::object properties, std::initializer_list<const char*> required) {
  boost::json::array names;
  for (const char* r : required) names.emplace_back(r);
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", std::move(names)},
          {"additionalProperties", false}};
}

boost::json::object string_property(const char* description, bool text = false) {
  boost::json::object p{{"type", "string"}, {"description", description}};
  if (text) {
    p["minLength"] = 1;
    p["maxLength"] = social_world::max_text;
  }
  return p;
}

}  // namespace

// ------------------------------------------------------------------ pair_set

bool social_world::pair_set::contains(std::uint32_t post, std::uint32_t agent) const {
  const std::uint64_t k = key(post, agent);
  return std::binary_search(sorted_.begin(), sorted_.end(), k) || (!pending_.empty() && pending_.count(k) > 0);
}

void social_world::pair_set::merge() {
  if (pending_.empty()) return;
  const auto middle = static_cast<std::ptrdiff_t>(sorted_.size());
  sorted_.insert(sorted_.end(), pending_.begin(), pending_.end());
  std::sort(sorted_.begin() + middle, sorted_.end());
  std::inplace_merge(sorted_.begin(), sorted_.begin() + middle, sorted_.end());
  pending_.clear();
}

// -------------------------------------------------------------- construction

social_world::social_world(world_spec spec, std::uint64_t seed, std::string base_dir)
    : spec_(std::move(spec)), seed_(seed), base_dir_(std::move(base_dir)) {
  if (spec_.feed_size > 100'000 || spec_.inbox_size > 100'000)
    throw world_error("social world: feed_size and inbox_size must be at most 100000");
  for (const auto& c : spec_.channels) {
    for (const auto& other : channels_)
      if (other.spec.name == c.name) throw world_error("social world: channel \"" + c.name + "\" declared twice");
    channels_.push_back({c, {}});
  }
}

void social_world::populate(const std::vector<std::string>& agent_ids) {
  agents_ = agent_directory(agent_ids);
  graph_ = make_graph(spec_.graph, agents_, seed_, base_dir_);
  const std::uint32_t n = agents_.size();
  const auto feed_size = static_cast<std::uint32_t>(spec_.feed_size);
  const auto inbox_size = static_cast<std::uint32_t>(spec_.inbox_size);
  lists_ = bounded_lists<3>(n, {feed_size, inbox_size, inbox_size});
  stamps_.assign(n, {});
}

void social_world::subscribe(std::uint32_t agent, std::string_view channel) {
  if (agent >= agents_.size()) throw world_error("social world: no agent " + std::to_string(agent));
  for (auto& c : channels_) {
    if (c.spec.name != channel) continue;
    auto& s = c.subscribers;
    const auto at = std::lower_bound(s.begin(), s.end(), agent);
    if (at == s.end() || *at != agent) s.insert(at, agent);
    return;
  }
  throw world_error("social world: unknown channel \"" + std::string(channel) + "\"");
}

std::vector<tool_spec> social_world::actions() const {
  boost::json::object post_properties{{"text", string_property("What to post.", true)}};
  if (!channels_.empty()) {
    auto channel =
        string_property("A channel to post to (its subscribers see it too); omit to post to your followers.");
    boost::json::array names;
    std::string described;
    for (const auto& c : channels_) {
      names.emplace_back(c.spec.name);
      described += "\n- " + c.spec.name + (c.spec.description.empty() ? "" : ": " + c.spec.description);
    }
    channel["enum"] = std::move(names);
    channel["description"] =
        "A channel to post to (its subscribers see it too); omit to post to your followers." + described;
    post_properties["channel"] = std::move(channel);
  }
  return {
      {"post", "Publish a post; it reaches your followers' feeds.", schema(std::move(post_properties), {"text"})},
      {"reply", "Reply to a post; it reaches your followers and the post's author.",
       schema({{"post_id", string_property("The id of the post to answer, e.g. p3.12.1.")},
               {"text", string_property("Your reply.", true)}},
              {"post_id", "text"})},
      {"repost", "Share a post with your followers.",
       schema({{"post_id", string_property("The id of the post to share.")}}, {"post_id"})},
      {"like", "Like a post.", schema({{"post_id", string_property("The id of the post to like.")}}, {"post_id"})},
      {"follow", "Follow an agent: their posts will reach your feed.",
       schema({{"agent", string_property("The id of the agent to follow.")}}, {"agent"})},
      {"unfollow", "Stop following an agent.",
       schema({{"agent", string_property("The id of the agent to stop following.")}}, {"agent"})},
      {"send_message", "Send a direct message to one agent.",
       schema({{"to", string_property("The id of the recipient.")}, {"text", string_property("The message.", true)}},
              {"to", "text"})},
      {"do_nothing", "Take no action this time.", schema({}, {})},
  };
}

// ---------------------------------------------------------------- validation

struct social_world::validated {
  action_kind kind = action_kind::do_nothing;
  std::string_view text;         // post, reply, send_message: in the action's arguments
  std::uint32_t channel = none;  // post
  std::uint32_t post = none;     // reply, like: the root aimed at; repost: the post given
  std::uint32_t agent = none;    // follow, unfollow: the followee; send_message: the recipient
};

std::uint64_t social_world::post_hash(std::uint32_t post) const {
  const auto& p = posts_[post];
  return key_hash(p.round, p.author, p.seq);
}

std::uint32_t social_world::find_post_index(std::string_view id) const {
  const auto k = parse_id(id, 'p');
  if (!k) return none;
  return post_index_.find(key_hash(k->round, k->author, k->seq), [&](std::uint32_t i) {
    const auto& p = posts_[i];
    return p.round == k->round && p.author == k->author && p.seq == k->seq;
  });
}

std::uint32_t social_world::resolve_agent(std::string_view id) const {
  const auto index = agents_.find(id);
  if (!index) refuse("unknown_agent", "no agent \"" + std::string(id) + "\"");
  return *index;
}

social_world::validated social_world::validate(const world_action& action) const {
  const auto kind = kind_named(action.name);
  if (!kind) refuse("unknown_action", "no action \"" + action.name + "\"");
  const boost::json::object& args = action.arguments;
  const std::uint32_t self = action.key.agent;
  validated v;
  v.kind = *kind;
  auto existing_post = [&]() {
    const std::string_view id = required_string(args, "post_id");
    const std::uint32_t p = find_post_index(id);
    if (p == none) refuse("unknown_post", "no post \"" + std::string(id) + "\"");
    return p;
  };
  switch (*kind) {
    case action_kind::post: {
      expect_only(args, {"text", "channel"});
      v.text = checked_text(args);
      if (const auto name = optional_string(args, "channel")) {
        for (std::size_t i = 0; i < channels_.size() && v.channel == none; ++i)
          if (channels_[i].spec.name == *name) v.channel = static_cast<std::uint32_t>(i);
        if (v.channel == none) refuse("unknown_channel", "no channel \"" + std::string(*name) + "\"");
      }
      break;
    }
    case action_kind::reply:
      expect_only(args, {"post_id", "text"});
      v.post = posts_[existing_post()].root;
      v.text = checked_text(args);
      break;
    case action_kind::repost:
      expect_only(args, {"post_id"});
      v.post = existing_post();
      if (reposted_.contains(posts_[v.post].root, self))
        refuse("already_reposted", "you already reposted " + post_id(posts_[v.post].root));
      break;
    case action_kind::like:
      expect_only(args, {"post_id"});
      v.post = posts_[existing_post()].root;
      if (likes_.contains(v.post, self)) refuse("already_liked", "you already liked " + post_id(v.post));
      break;
    case action_kind::follow:
    case action_kind::unfollow: {
      expect_only(args, {"agent"});
      if (self == operator_agent) refuse("not_for_operator", "the operator follows no one");
      v.agent = resolve_agent(required_string(args, "agent"));
      const bool following = graph_.is_following(self, v.agent);
      if (*kind == action_kind::follow && v.agent == self) refuse("self_follow", "you cannot follow yourself");
      if (*kind == action_kind::follow && following)
        refuse("already_following", "you already follow " + agents_.id(v.agent));
      if (*kind == action_kind::unfollow && !following)
        refuse("not_following", "you do not follow " + agents_.id(v.agent));
      break;
    }
    case action_kind::send_message:
      expect_only(args, {"to", "text"});
      v.agent = resolve_agent(required_string(args, "to"));
      if (v.agent == self) refuse("self_message", "you cannot message yourself");
      v.text = checked_text(args);
      break;
    case action_kind::do_nothing:
      expect_only(args, {});
      break;
  }
  return v;
}

boost::json::value social_world::check(const world_action& action) const {
  if (action.key.agent >= agents_.size() && action.key.agent != operator_agent)
    throw std::invalid_argument("social world: no agent " + std::to_string(action.key.agent));
  if (action.round < 1 || action.round >= std::numeric_limits<std::uint32_t>::max())
    throw std::invalid_argument("social world: round " + std::to_string(action.round) + " out of range");
  try {
    const validated v = validate(action);
    const auto round = static_cast<std::uint32_t>(action.round);
    switch (v.kind) {
      case action_kind::post:
        return {{"post_id", make_id('p', round, action.key.agent, action.key.seq)}};
      case action_kind::reply:
        return {{"post_id", make_id('p', round, action.key.agent, action.key.seq)}, {"reply_to", post_id(v.post)}};
      case action_kind::repost:
        return {{"post_id", make_id('p', round, action.key.agent, action.key.seq)},
                {"repost_of", post_id(posts_[v.post].root)}};
      case action_kind::like:
        return {{"liked", post_id(v.post)}};
      case action_kind::follow:
        return {{"following", agents_.id(v.agent)}};
      case action_kind::unfollow:
        return {{"unfollowed", agents_.id(v.agent)}};
      case action_kind::send_message:
        return {{"message_id", make_id('m', round, action.key.agent, action.key.seq)}};
      case action_kind::do_nothing:
        return {{"ok", true}};
    }
    return nullptr;
  } catch (const tool_failure&) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    throw;
  }
}

// --------------------------------------------------------------------- apply

std::string social_world::post_id(std::uint32_t post) const {
  const auto& p = posts_[post];
  return make_id('p', p.round, p.author, p.seq);
}

std::string social_world::agent_name(std::uint32_t agent) const {
  return agent == operator_agent ? std::string("operator") : agents_.id(agent);
}

std::string_view social_world::text_of(std::uint32_t post) const {
  const auto& p = posts_[posts_[post].root];
  return texts_.at(p.text_at, p.text_size);
}

void social_world::reach(std::uint32_t agent) {
  const auto round = static_cast<std::uint32_t>(last_round_);
  if (stamps_[agent].round == round) return;
  stamps_[agent].round = round;
  reached_.push_back(agent);
}

void social_world::deliver_post(std::uint32_t post, std::uint32_t also) {
  const post_record& p = posts_[post];
  auto give = [&](std::uint32_t agent) {
    if (agent == p.author || stamps_[agent].post == post + 1) return;
    stamps_[agent].post = post + 1;
    lists_.push(feed, agent, post);
    reach(agent);
    ++round_deliveries_;
  };
  if (p.author == operator_agent) {
    if (p.channel == none)
      for (std::uint32_t a = 0; a < agents_.size(); ++a) give(a);
  } else {
    graph_.for_each_follower(p.author, give);
  }
  if (p.channel != none)
    for (const std::uint32_t s : channels_[p.channel].subscribers) give(s);
  if (also != none && also != operator_agent) give(also);
}

void social_world::apply(std::int64_t round, const std::vector<std::uint32_t>& activated,
                         const std::vector<world_action>& actions) {
  if (round <= last_round_ || round >= std::numeric_limits<std::uint32_t>::max())
    throw std::invalid_argument("social world: round " + std::to_string(round) + " applied after round " +
                                std::to_string(last_round_));
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const auto& a = actions[i];
    if (a.round != round)
      throw std::invalid_argument("social world: an action of round " + std::to_string(a.round) + " applied in round " +
                                  std::to_string(round));
    if (i > 0 && !(actions[i - 1].key < a.key)) throw std::invalid_argument("social world: actions out of key order");
    if (a.key.agent >= agents_.size() && a.key.agent != operator_agent)
      throw std::invalid_argument("social world: no agent " + std::to_string(a.key.agent));
  }
  for (const std::uint32_t a : activated) {
    if (a >= agents_.size()) throw std::invalid_argument("social world: no agent " + std::to_string(a));
    lists_.mark_seen(a);
  }
  last_round_ = round;
  const auto r = static_cast<std::uint32_t>(round);
  reached_.clear();
  round_deliveries_ = 0;
  std::uint64_t applied[action_kinds] = {};
  std::uint64_t skipped = 0;
  std::uint64_t messages_delivered = 0;

  for (const auto& action : actions) {
    validated v;
    try {
      v = validate(action);
    } catch (const tool_failure&) {
      // Valid at the round's start, made invalid by an earlier action of
      // the same round (a second like of the same post).
      ++skipped;
      continue;
    }
    const std::uint32_t self = action.key.agent;
    switch (v.kind) {
      case action_kind::post:
      case action_kind::reply:
      case action_kind::repost: {
        if (posts_.size() >= none - 1) throw std::length_error("social world: too many posts");
        const auto index = static_cast<std::uint32_t>(posts_.size());
        post_record p{};
        p.round = r;
        p.author = self;
        p.seq = action.key.seq;
        p.parent = v.post;
        p.root = index;
        p.channel = v.channel;
        p.kind = v.kind == action_kind::post    ? post_kind::post
                 : v.kind == action_kind::reply ? post_kind::reply
                                                : post_kind::repost;
        std::uint32_t also = none;
        if (v.kind == action_kind::repost) {
          p.root = posts_[v.post].root;
          ++posts_[p.root].reposts;
          reposted_.insert(p.root, self);
        } else {
          p.text_at = texts_.append(v.text);
          p.text_size = static_cast<std::uint32_t>(v.text.size());
          if (v.kind == action_kind::reply) {
            ++posts_[v.post].replies;
            also = posts_[v.post].author;
          }
        }
        posts_.push_back(p);
        post_index_.insert(post_hash(index), index, [&](std::uint32_t i) { return post_hash(i); });
        deliver_post(index, also);
        break;
      }
      case action_kind::like:
        ++posts_[v.post].likes;
        likes_.insert(v.post, self);
        break;
      case action_kind::follow:
        graph_.follow(self, v.agent);
        lists_.push(new_followers, v.agent, self);
        reach(v.agent);
        break;
      case action_kind::unfollow:
        graph_.unfollow(self, v.agent);
        break;
      case action_kind::send_message: {
        if (messages_.size() >= none - 1) throw std::length_error("social world: too many messages");
        const auto index = static_cast<std::uint32_t>(messages_.size());
        messages_.push_back(
            {r, self, action.key.seq, static_cast<std::uint32_t>(v.text.size()), texts_.append(v.text)});
        lists_.push(inbox, v.agent, index);
        reach(v.agent);
        ++messages_delivered;
        break;
      }
      case action_kind::do_nothing:
        break;
    }
    ++applied[static_cast<std::size_t>(v.kind)];
  }
  likes_.merge();
  reposted_.merge();
  std::sort(reached_.begin(), reached_.end());

  std::uint64_t total = 0;
  for (const auto n : applied) total += n;
  figures_ = {{"round", round},
              {"applied", total},
              {"skipped", skipped},
              {"refused", refused_.exchange(0, std::memory_order_relaxed)}};
  for (std::size_t i = 0; i < action_kinds; ++i) figures_[kind_names[i]] = applied[i];
  figures_["posts_total"] = posts_.size();
  figures_["messages_total"] = messages_.size();
  figures_["follows_total"] = graph_.follow_count();
  figures_["feed_deliveries"] = round_deliveries_;
  figures_["messages_delivered"] = messages_delivered;
  figures_["reached"] = reached_.size();
}

// ------------------------------------------------------------------- observe

world_observation social_world::observe(std::uint32_t agent, std::int64_t round) const {
  if (agent >= agents_.size()) throw std::invalid_argument("social world: no agent " + std::to_string(agent));
  world_observation out;
  const std::uint32_t feed_new = lists_.unseen(feed, agent);
  const std::uint32_t inbox_new = lists_.unseen(inbox, agent);
  const std::uint32_t followers_new = lists_.unseen(new_followers, agent);
  if (feed_new == 0 && inbox_new == 0 && followers_new == 0) return out;
  out.empty = false;
  std::string& text = out.text;
  text.reserve(256);
  text += "Round ";
  text += std::to_string(round);
  text += ". What reached you since you last acted:\n";
  auto& data = out.data;
  data["round"] = round;
  // One section a list: a heading with how many are new and shown, a line
  // an entry ("- " and what `entry` appends), and the same as JSON.
  auto section = [&](const char* heading, const char* key, list which, std::uint32_t unseen, auto&& entry) {
    if (unseen == 0) return;
    const std::uint32_t shown = std::min(unseen, lists_.capacity(which));
    text += heading;
    text += " (";
    if (shown != unseen) text += std::to_string(shown) + " of ";
    text += std::to_string(unseen) + " new):\n";
    boost::json::array items;
    lists_.for_each_newest(which, agent, unseen, [&](std::uint32_t index) {
      text += "- ";
      items.push_back(entry(index));
      text += '\n';
    });
    data[key] = std::move(items);
    data[std::string(key) + "_new"] = unseen;
  };
  section("Feed, newest first", "feed", feed, feed_new, [&](std::uint32_t index) {
    const post_record& p = posts_[index];
    const post_record& root = posts_[p.root];
    const std::string id = post_id(index);
    const std::string author = agent_name(p.author);
    boost::json::object item{{"id", id}, {"author", author}};
    text += id;
    text += " by ";
    text += author;
    switch (p.kind) {
      case post_kind::post:
        item["kind"] = "post";
        break;
      case post_kind::reply:
        item["kind"] = "reply";
        item["reply_to"] = post_id(p.parent);
        text += ", replying to ";
        text += post_id(p.parent);
        text += " by ";
        text += agent_name(posts_[p.parent].author);
        break;
      case post_kind::repost:
        item["kind"] = "repost";
        item["repost_of"] = post_id(p.root);
        item["original_author"] = agent_name(root.author);
        text += ", reposting ";
        text += post_id(p.root);
        text += " by ";
        text += agent_name(root.author);
        break;
    }
    if (root.channel != none) {
      item["channel"] = channels_[root.channel].spec.name;
      text += " in #";
      text += channels_[root.channel].spec.name;
    }
    const std::string_view body = text_of(index);
    text += ": ";
    append_json_string(text, body);
    text += " (likes " + std::to_string(root.likes) + ", reposts " + std::to_string(root.reposts) + ", replies " +
            std::to_string(root.replies) + ")";
    item["text"] = body;
    item["likes"] = root.likes;
    item["reposts"] = root.reposts;
    item["replies"] = root.replies;
    return item;
  });
  section("Messages, newest first", "messages", inbox, inbox_new, [&](std::uint32_t index) {
    const message_record& m = messages_[index];
    const std::string id = make_id('m', m.round, m.from, m.seq);
    const std::string from = agent_name(m.from);
    const std::string_view body = texts_.at(m.text_at, m.text_size);
    text += id;
    text += " from ";
    text += from;
    text += ": ";
    append_json_string(text, body);
    return boost::json::object{{"id", id}, {"from", from}, {"text", body}};
  });
  section("New followers, newest first", "new_followers", new_followers, followers_new, [&](std::uint32_t index) {
    text += agents_.id(index);
    return boost::json::string(agents_.id(index));
  });
  return out;
}

// ------------------------------------------------------------------- reports

social_world::post_view social_world::view(std::uint32_t post) const {
  const post_record& p = posts_[post];
  const post_record& root = posts_[p.root];
  post_view v;
  v.id = post_id(post);
  v.author = agent_name(p.author);
  v.kind = p.kind == post_kind::post ? "post" : p.kind == post_kind::reply ? "reply" : "repost";
  v.round = p.round;
  v.text = std::string(text_of(post));
  if (p.parent != none) v.parent = post_id(p.parent);
  v.root = post_id(p.root);
  if (root.channel != none) v.channel = channels_[root.channel].spec.name;
  v.likes = root.likes;
  v.reposts = root.reposts;
  v.replies = root.replies;
  return v;
}

std::optional<social_world::post_view> social_world::find_post(std::string_view id) const {
  const std::uint32_t p = find_post_index(id);
  if (p == none) return std::nullopt;
  return view(p);
}

std::vector<social_world::post_view> social_world::cascade(std::string_view root_id) const {
  std::uint32_t root = find_post_index(root_id);
  if (root == none) return {};
  root = posts_[root].root;
  std::vector<post_view> out{view(root)};
  for (std::size_t i = root + 1; i < posts_.size(); ++i)
    if (posts_[i].kind == post_kind::repost && posts_[i].root == root)
      out.push_back(view(static_cast<std::uint32_t>(i)));
  return out;
}

std::size_t social_world::memory_bytes() const {
  std::size_t bytes = graph_.memory_bytes() + lists_.memory_bytes() + post_index_.memory_bytes() +
                      likes_.memory_bytes() + reposted_.memory_bytes() + stamps_.capacity() * sizeof(stamp);
  // A deque's chunks hold 512 bytes; its map a pointer a chunk.
  auto deque_bytes = [](std::size_t n, std::size_t size) {
    const std::size_t per_chunk = std::max<std::size_t>(1, 512 / size);
    return (n / per_chunk + 1) * (per_chunk * size + sizeof(void*));
  };
  bytes += deque_bytes(posts_.size(), sizeof(post_record)) + deque_bytes(messages_.size(), sizeof(message_record)) +
           texts_.memory_bytes();
  bytes += reached_.capacity() * sizeof(std::uint32_t);
  bytes += agents_.memory_bytes();
  for (const auto& c : channels_) bytes += c.subscribers.capacity() * sizeof(std::uint32_t);
  return bytes;
}

}  // namespace troupe
