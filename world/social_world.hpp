#pragma once
// The built-in social world: agents post, reply, repost and like; follow and
// unfollow each other; send each other direct messages. A post reaches the
// feeds of its author's followers (and, posted to a channel, of the
// channel's subscribers); a reply also reaches the author of the post it
// answers; a message reaches its recipient's inbox. Feeds and inboxes keep
// the newest feed_size and inbox_size entries of each agent.
//
// A repost points at the original (its root): likes, reposts and replies
// aimed at a repost count on the root, and each repost keeps the post it
// was made from, so a report can draw how a post spread (cascade()).
//
// Ids are made of the action's round and key alone ("p3.12.1": round 3,
// agent 12, its action 1; "op" for the operator), so a seeded run names
// the same posts every time; a flat hash index finds a post by its id.
//
// The operator (interventions) may post, reply, repost, like and send
// messages; what it posts, replies or reposts outside a channel reaches
// every agent. It follows no one (not_for_operator).
//
// Sized for a million agents: per agent a few 4-byte counters and rings of
// post indices, per post 56 bytes, 8 to 16 of index and its text in one
// shared arena (docs/benchmarks.md has the figures).

#include "world/agent_directory.hpp"
#include "world/bounded_lists.hpp"
#include "world/flat_index.hpp"
#include "world/social_graph.hpp"
#include "world/text_arena.hpp"
#include "world/world.hpp"
#include "world/world_spec.hpp"

#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace troupe {

// A world that cannot be built as asked (an unknown channel).
struct world_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class social_world final : public world {
 public:
  // The longest text a post, reply or message may have, in code points.
  static constexpr std::size_t max_text = 2'000;

  // The graph is made in populate, with `seed` (generated) or from the
  // edge list (relative paths against base_dir).
  social_world(world_spec spec, std::uint64_t seed, std::string base_dir = {});

  // Once. Throws graph_error (edge_list_error for a file) when the graph
  // cannot be made, std::invalid_argument on a duplicate agent id.
  void populate(const std::vector<std::string>& agent_ids) override;
  // After populate, before round 1: the agent follows the channel's posts.
  // world_error for a channel the spec does not declare.
  void subscribe(std::uint32_t agent, std::string_view channel);

  std::vector<tool_spec> actions() const override;
  boost::json::value check(const world_action& action) const override;
  world_observation observe(std::uint32_t agent, std::int64_t round) const override;
  // std::invalid_argument when the contract is broken: rounds not
  // increasing, actions out of key order or of another round, an agent
  // index outside the population.
  void apply(std::int64_t round, const std::vector<std::uint32_t>& activated,
             const std::vector<world_action>& actions) override;
  std::vector<std::uint32_t> reached() const override { return reached_; }
  boost::json::object round_figures() const override { return figures_; }

  // For reports and tests.
  struct post_view {
    std::string id;
    std::string author;  // an agent id, or "operator"
    std::string kind;    // "post", "reply", "repost"
    std::int64_t round = 0;
    std::string text;         // a repost's is its root's
    std::string parent;       // reply: the post answered; repost: the post reposted; else empty
    std::string root;         // repost: the original; else the post itself
    std::string channel;      // empty: none
    std::uint32_t likes = 0;  // on a root; a repost's are its root's
    std::uint32_t reposts = 0;
    std::uint32_t replies = 0;
    friend bool operator==(const post_view&, const post_view&) = default;
  };
  std::optional<post_view> find_post(std::string_view id) const;
  // The post and every repost whose root it is, in the order they were made.
  std::vector<post_view> cascade(std::string_view root_id) const;
  const social_graph& graph() const { return graph_; }
  const agent_directory& agents() const { return agents_; }
  std::size_t post_count() const { return posts_.size(); }
  // Bytes the world's state holds (the allocator's rounding aside).
  std::size_t memory_bytes() const;

 private:
  static constexpr std::uint32_t none = 0xffffffffu;
  enum class post_kind : std::uint8_t { post, reply, repost };
  struct post_record {
    std::uint32_t round;
    std::uint32_t author;  // an index, or operator_agent
    std::uint32_t seq;
    std::uint32_t parent;   // none, or a post index
    std::uint32_t root;     // itself unless a repost
    std::uint32_t channel;  // none, or a channel index
    std::uint32_t likes = 0;
    std::uint32_t reposts = 0;
    std::uint32_t replies = 0;
    std::uint32_t text_size = 0;
    std::uint64_t text_at = 0;  // in texts_
    post_kind kind;
  };
  struct message_record {
    std::uint32_t round;
    std::uint32_t from;  // an index, or operator_agent
    std::uint32_t seq;
    std::uint32_t text_size;
    std::uint64_t text_at;
  };
  struct channel_state {
    channel_spec spec;
    std::vector<std::uint32_t> subscribers;  // sorted
  };
  // A pair (post, agent) recorded once: likes and reposts. The rounds
  // before hold a sorted vector; the round being applied, a hash set
  // merged into it at the round's end.
  class pair_set {
   public:
    bool contains(std::uint32_t post, std::uint32_t agent) const;
    void insert(std::uint32_t post, std::uint32_t agent) { pending_.insert(key(post, agent)); }
    void merge();
    std::size_t memory_bytes() const { return sorted_.capacity() * sizeof(std::uint64_t); }

   private:
    static std::uint64_t key(std::uint32_t post, std::uint32_t agent) { return std::uint64_t{post} << 32 | agent; }
    std::vector<std::uint64_t> sorted_;
    std::unordered_set<std::uint64_t> pending_;
  };
  // An action's arguments, read and checked against the current state.
  struct validated;

  validated validate(const world_action& action) const;
  std::uint32_t find_post_index(std::string_view id) const;  // none when absent
  std::uint32_t resolve_agent(std::string_view id) const;    // tool_failure when absent
  std::string post_id(std::uint32_t post) const;
  std::string agent_name(std::uint32_t agent) const;
  std::uint64_t post_hash(std::uint32_t post) const;
  std::string_view text_of(std::uint32_t post) const;
  void deliver_post(std::uint32_t post, std::uint32_t also);
  void reach(std::uint32_t agent);
  post_view view(std::uint32_t post) const;

  world_spec spec_;
  std::uint64_t seed_;
  std::string base_dir_;
  agent_directory agents_;
  social_graph graph_;
  std::vector<channel_state> channels_;
  // In the order applied. A deque grows in 512-byte chunks: no copy of a
  // million records when it grows, no doubled capacity held.
  std::deque<post_record> posts_;
  std::deque<message_record> messages_;
  text_arena texts_;       // every post's and message's text
  flat_index post_index_;  // posts_ by id
  // Per agent: its feed (post indices), inbox (message indices) and who
  // started following it (agent indices).
  enum list : std::size_t { feed, inbox, new_followers };
  bounded_lists<3> lists_;
  pair_set likes_;
  pair_set reposted_;
  // Per agent, side by side (a delivery reads both): the last post
  // delivered to it + 1 (no post twice), the last round something reached it.
  struct stamp {
    std::uint32_t post = 0;
    std::uint32_t round = 0;
  };
  std::vector<stamp> stamps_;
  std::vector<std::uint32_t> reached_;
  std::int64_t last_round_ = 0;
  std::uint64_t round_deliveries_ = 0;
  mutable std::atomic<std::uint64_t> refused_{0};
  boost::json::object figures_;
};

}  // namespace troupe
