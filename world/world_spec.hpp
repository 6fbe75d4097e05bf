#pragma once
// What a scenario says of its world: the built-in social world's graph,
// channels and list sizes, or the name and settings of a world a program
// registered. Plain data (simulation/scenario.hpp holds it; world/ reads it).

#include <boost/json/object.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace troupe {

enum class graph_kind { none, edge_list, erdos_renyi, barabasi_albert, watts_strogatz };

// Who follows whom. Generated graphs are undirected (each edge is a follow
// both ways); an edge list is directed (follower, followee), by agent id or
// by index.
struct graph_spec {
  graph_kind kind = graph_kind::none;
  std::string path{};  // edge_list: a CSV file, relative to the scenario file
  double p = 0.01;     // erdos_renyi: probability of each edge
  std::size_t m = 3;   // barabasi_albert: edges each new node brings
  std::size_t k = 4;   // watts_strogatz: each node's ring neighbours (even)
  double beta = 0.1;   // watts_strogatz: probability of rewiring an edge
  friend bool operator==(const graph_spec&, const graph_spec&) = default;
};

struct channel_spec {
  std::string name;
  std::string description{};
  friend bool operator==(const channel_spec&, const channel_spec&) = default;
};

struct world_spec {
  // "social" (built in), or the name a program registered its own world under.
  std::string kind = "social";
  graph_spec graph{};
  std::vector<channel_spec> channels{};
  std::size_t feed_size = 10;   // posts an observation shows, newest first
  std::size_t inbox_size = 10;  // direct messages an observation shows, newest first
  // A program's own world reads its settings here ([world.settings] in TOML).
  boost::json::object settings{};
  friend bool operator==(const world_spec&, const world_spec&) = default;
};

}  // namespace troupe
