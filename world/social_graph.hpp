#pragma once
// Who follows whom among the agents of a simulation (indices 0..n-1), built
// for a million agents and more.
//
// The follows a run starts with (generated or loaded) are held as two
// compressed sparse rows: each agent's followers, sorted (to deliver its
// posts) and each agent's followees, sorted (to answer "does a follow b" by
// binary search). That is 8 bytes a follow (4 in each direction) plus 8
// bytes an agent for the row offsets: a Barabási–Albert graph of 1M agents
// with m = 3 (6M follows) takes about 56 MB. Per-agent vectors would add 48
// bytes an agent of headers and the allocator's rounding on top.
//
// Follows and unfollows during a run go to a delta: for the agents they
// touch, sorted lists of followers (and followees) added and removed. The
// delta is folded back into the rows when it outgrows a 32nd of them (an
// entry of it costs some 50 bytes against 4 in a row), so a round pays for
// the follows it changes plus, spread over the rounds, one linear rebuild
// per rows/32 changes, never a copy of the graph a follow.

#include "world/agent_directory.hpp"
#include "world/world_spec.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace troupe {

// A graph that cannot be built: parameters out of range, too many edges.
struct graph_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A line of an edge-list file that cannot be read; what() starts with
// "FILE:LINE: ".
struct edge_list_error : graph_error {
  edge_list_error(std::string file, std::size_t line, const std::string& message)
      : graph_error(file + ":" + std::to_string(line) + ": " + message), file(std::move(file)), line(line) {}
  std::string file;
  std::size_t line;  // 1-based; 0 when the file itself cannot be read
};

struct follow_edge {
  std::uint32_t follower = 0;
  std::uint32_t followee = 0;
  friend bool operator==(const follow_edge&, const follow_edge&) = default;
  friend auto operator<=>(const follow_edge&, const follow_edge&) = default;
};

class social_graph {
 public:
  social_graph() = default;
  // Duplicate follows count once; a self-follow or an index >= agents throws
  // graph_error.
  social_graph(std::uint32_t agents, const std::vector<follow_edge>& follows);
  // Each pair followed both ways (a generated graph: undirected).
  static social_graph undirected(std::uint32_t agents, const std::vector<follow_edge>& edges);

  std::uint32_t agents() const { return agents_; }
  std::uint64_t follow_count() const { return follow_count_; }
  bool is_following(std::uint32_t follower, std::uint32_t followee) const {
    return followees_.contains(follower, followee);
  }
  std::uint32_t follower_count(std::uint32_t agent) const { return followers_.count(agent); }
  std::uint32_t followee_count(std::uint32_t agent) const { return followees_.count(agent); }
  // In increasing index order.
  template <class F>
  void for_each_follower(std::uint32_t agent, F&& f) const {
    followers_.for_each(agent, f);
  }
  template <class F>
  void for_each_followee(std::uint32_t agent, F&& f) const {
    followees_.for_each(agent, f);
  }

  // False when nothing changed: already following, a self-follow, or not following.
  bool follow(std::uint32_t follower, std::uint32_t followee);
  bool unfollow(std::uint32_t follower, std::uint32_t followee);

  // Bytes held, rows and delta (the allocator's rounding aside).
  std::size_t memory_bytes() const { return followers_.memory_bytes() + followees_.memory_bytes(); }

 private:
  // One direction: row `a` lists the agents a is linked to.
  class adjacency {
   public:
    void build(std::uint32_t agents, const std::vector<follow_edge>& edges, bool by_follower);
    bool contains(std::uint32_t a, std::uint32_t b) const;
    std::uint32_t count(std::uint32_t a) const;
    template <class F>
    void for_each(std::uint32_t a, F& f) const {
      const std::uint32_t* it = targets_.data() + offsets_[a];
      const std::uint32_t* const end = targets_.data() + offsets_[a + 1];
      const auto d = deltas_.empty() ? deltas_.end() : deltas_.find(a);
      if (d == deltas_.end()) {
        for (; it != end; ++it) f(*it);
        return;
      }
      // Merge the row, less its removals, with the additions: all sorted.
      auto add = d->second.added.begin();
      auto removed = d->second.removed.begin();
      for (; it != end; ++it) {
        while (add != d->second.added.end() && *add < *it) f(*add++);
        while (removed != d->second.removed.end() && *removed < *it) ++removed;
        if (removed != d->second.removed.end() && *removed == *it) continue;
        f(*it);
      }
      for (; add != d->second.added.end(); ++add) f(*add);
    }
    // Links b to a's row (adding: b not linked yet) or unlinks it (b linked).
    void change(std::uint32_t a, std::uint32_t b, bool adding);
    std::size_t delta_size() const { return delta_size_; }
    std::size_t row_size() const { return targets_.size(); }
    void compact();
    std::size_t memory_bytes() const;

   private:
    struct delta {
      std::vector<std::uint32_t> added;    // sorted, none in the row
      std::vector<std::uint32_t> removed;  // sorted, all in the row
    };
    std::vector<std::uint32_t> offsets_{0};  // agents + 1
    std::vector<std::uint32_t> targets_;
    std::unordered_map<std::uint32_t, delta> deltas_;
    std::size_t delta_size_ = 0;
  };

  void compact_if_large();

  std::uint32_t agents_ = 0;
  std::uint64_t follow_count_ = 0;
  adjacency followers_;  // row of b: who follows b
  adjacency followees_;  // row of a: whom a follows
};

// Generators. Every one is undirected (each edge a follow both ways) and
// draws from seeded_random alone: the same arguments make the same graph on
// any machine. They follow networkx's algorithms (same edge counts and
// distributions, not the same edges: the random sources differ).

// G(n, p): each pair an edge with probability p, drawn by geometric skips
// between edges (Batagelj and Brandes), so O(n + edges), not O(n^2).
social_graph erdos_renyi(std::uint32_t n, double p, std::uint64_t seed);
// Preferential attachment from a star of m + 1 nodes: each new node links to
// m distinct nodes drawn from the list holding every node once per edge end.
// Exactly m * (n - m) edges. Needs 1 <= m < n.
social_graph barabasi_albert(std::uint32_t n, std::uint32_t m, std::uint64_t seed);
// A ring where each node links to its k nearest (k even, k < n), then each
// edge (u, u + j) rewired with probability beta to (u, w), w uniform, no
// self-loop or duplicate. Exactly n * k / 2 edges.
social_graph watts_strogatz(std::uint32_t n, std::uint32_t k, double beta, std::uint64_t seed);

// An edge list: a CSV file of `follower,followee` lines, each an agent id
// or an index (an id wins when both read), optional spaces and double quotes
// around a field, blank lines and lines starting with '#' skipped. The
// first other line is a header when neither of its fields names an agent.
// Directed: a line is one follow. Duplicate lines count once. Any other
// fault throws edge_list_error naming the file and line.
social_graph load_edge_list(const std::string& path, const agent_directory& agents);

// The graph a world_spec's graph_spec declares, for these agents; a relative
// edge-list path is resolved against base_dir. graph_kind::none: no follows.
social_graph make_graph(const graph_spec& spec, const agent_directory& agents, std::uint64_t seed,
                        const std::string& base_dir);

}  // namespace troupe
