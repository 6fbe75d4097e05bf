#include "world/social_graph.hpp"

#include "world/seeded_random.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

namespace troupe {

void social_graph::adjacency::build(std::uint32_t agents, const std::vector<follow_edge>& edges, bool by_follower) {
  // Counting sort into rows, then each row sorted and its duplicates dropped
  // in place: two passes over the edges, no copy of them.
  std::vector<std::uint64_t> start(static_cast<std::size_t>(agents) + 1, 0);
  for (const auto& e : edges) ++start[(by_follower ? e.follower : e.followee) + 1];
  for (std::size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
  if (start.back() > std::numeric_limits<std::uint32_t>::max())
    throw graph_error("social_graph: more than 2^32 - 1 follows");
  targets_.assign(start.back(), 0);
  std::vector<std::uint64_t> fill(start.begin(), start.end() - 1);
  for (const auto& e : edges) {
    const std::uint32_t row = by_follower ? e.follower : e.followee;
    targets_[fill[row]++] = by_follower ? e.followee : e.follower;
  }
  offsets_.assign(start.size(), 0);
  std::size_t out = 0;
  for (std::uint32_t a = 0; a < agents; ++a) {
    const auto first = targets_.begin() + static_cast<std::ptrdiff_t>(start[a]);
    const auto last = targets_.begin() + static_cast<std::ptrdiff_t>(start[a + 1]);
    std::sort(first, last);
    const auto end = std::unique(first, last);
    out = static_cast<std::size_t>(std::move(first, end, targets_.begin() + static_cast<std::ptrdiff_t>(out)) -
                                   targets_.begin());
    offsets_[a + 1] = static_cast<std::uint32_t>(out);
  }
  targets_.resize(out);
  targets_.shrink_to_fit();
  deltas_.clear();
  delta_size_ = 0;
}

bool social_graph::adjacency::contains(std::uint32_t a, std::uint32_t b) const {
  if (!deltas_.empty()) {
    const auto d = deltas_.find(a);
    if (d != deltas_.end()) {
      if (std::binary_search(d->second.added.begin(), d->second.added.end(), b)) return true;
      if (std::binary_search(d->second.removed.begin(), d->second.removed.end(), b)) return false;
    }
  }
  return std::binary_search(targets_.begin() + offsets_[a], targets_.begin() + offsets_[a + 1], b);
}

std::uint32_t social_graph::adjacency::count(std::uint32_t a) const {
  std::uint32_t n = offsets_[a + 1] - offsets_[a];
  if (!deltas_.empty()) {
    const auto d = deltas_.find(a);
    if (d != deltas_.end())
      n = n + static_cast<std::uint32_t>(d->second.added.size()) - static_cast<std::uint32_t>(d->second.removed.size());
  }
  return n;
}

namespace {

void insert_sorted(std::vector<std::uint32_t>& v, std::uint32_t x) {
  v.insert(std::lower_bound(v.begin(), v.end(), x), x);
}

// True when x was there.
bool erase_sorted(std::vector<std::uint32_t>& v, std::uint32_t x) {
  const auto it = std::lower_bound(v.begin(), v.end(), x);
  if (it == v.end() || *it != x) return false;
  v.erase(it);
  return true;
}

}  // namespace

void social_graph::adjacency::change(std::uint32_t a, std::uint32_t b, bool adding) {
  auto& d = deltas_[a];
  // A change that undoes an earlier one leaves the row as built.
  if (erase_sorted(adding ? d.removed : d.added, b)) {
    --delta_size_;
  } else {
    insert_sorted(adding ? d.added : d.removed, b);
    ++delta_size_;
  }
  if (d.added.empty() && d.removed.empty()) deltas_.erase(a);
}

void social_graph::adjacency::compact() {
  if (deltas_.empty()) return;
  const auto agents = static_cast<std::uint32_t>(offsets_.size() - 1);
  std::vector<std::uint32_t> offsets(offsets_.size(), 0);
  std::vector<std::uint32_t> targets;
  targets.reserve(targets_.size() + delta_size_);
  for (std::uint32_t a = 0; a < agents; ++a) {
    auto push = [&](std::uint32_t b) { targets.push_back(b); };
    for_each(a, push);
    offsets[a + 1] = static_cast<std::uint32_t>(targets.size());
  }
  offsets_ = std::move(offsets);
  targets_ = std::move(targets);
  deltas_.clear();
  delta_size_ = 0;
}

std::size_t social_graph::adjacency::memory_bytes() const {
  std::size_t bytes = offsets_.capacity() * sizeof(std::uint32_t) + targets_.capacity() * sizeof(std::uint32_t);
  for (const auto& [a, d] : deltas_)
    bytes +=
        sizeof(a) + sizeof(d) + 2 * sizeof(void*) + (d.added.capacity() + d.removed.capacity()) * sizeof(std::uint32_t);
  return bytes + deltas_.bucket_count() * sizeof(void*);
}

social_graph::social_graph(std::uint32_t agents, const std::vector<follow_edge>& follows) : agents_(agents) {
  for (const auto& e : follows) {
    if (e.follower >= agents || e.followee >= agents)
      throw graph_error("social_graph: follow " + std::to_string(e.follower) + " -> " + std::to_string(e.followee) +
                        " names an index beyond " + std::to_string(agents) + " agents");
    if (e.follower == e.followee)
      throw graph_error("social_graph: agent " + std::to_string(e.follower) + " follows itself");
  }
  followers_.build(agents, follows, false);
  followees_.build(agents, follows, true);
  follow_count_ = followees_.row_size();
}

social_graph social_graph::undirected(std::uint32_t agents, const std::vector<follow_edge>& edges) {
  std::vector<follow_edge> both;
  both.reserve(edges.size() * 2);
  for (const auto& e : edges) {
    both.push_back(e);
    both.push_back({e.followee, e.follower});
  }
  return social_graph(agents, both);
}

bool social_graph::follow(std::uint32_t follower, std::uint32_t followee) {
  if (follower == followee || follower >= agents_ || followee >= agents_ || is_following(follower, followee))
    return false;
  followees_.change(follower, followee, true);
  followers_.change(followee, follower, true);
  ++follow_count_;
  compact_if_large();
  return true;
}

bool social_graph::unfollow(std::uint32_t follower, std::uint32_t followee) {
  if (follower >= agents_ || followee >= agents_ || !is_following(follower, followee)) return false;
  followees_.change(follower, followee, false);
  followers_.change(followee, follower, false);
  --follow_count_;
  compact_if_large();
  return true;
}

void social_graph::compact_if_large() {
  // An entry of the delta costs some 50 bytes (a hash node, two vectors)
  // against 4 in a row, and a hash lookup on every read of its row; past a
  // 32nd of the rows a rebuild (linear, ~0.1 s for 6M follows) is cheaper.
  const std::size_t limit = std::max<std::size_t>(4096, followees_.row_size() / 32);
  if (followees_.delta_size() > limit || followers_.delta_size() > limit) {
    followees_.compact();
    followers_.compact();
  }
}

// ---------------------------------------------------------------- generators

social_graph erdos_renyi(std::uint32_t n, double p, std::uint64_t seed) {
  if (!(p >= 0.0 && p <= 1.0)) throw graph_error("erdos_renyi: p must be within [0, 1], not " + std::to_string(p));
  const double pairs = static_cast<double>(n) * (static_cast<double>(n) - 1) / 2;
  if (p * pairs > 1e9)
    throw graph_error("erdos_renyi: n = " + std::to_string(n) + " and p = " + std::to_string(p) +
                      " expect more than 10^9 edges");
  std::vector<follow_edge> edges;
  edges.reserve(static_cast<std::size_t>(p * pairs * 1.01) + 16);
  if (p > 0.0 && n > 1) {
    seeded_random random(seed);
    const double lp = std::log(1.0 - p);  // -inf when p = 1: every skip 0
    std::int64_t v = 1;
    std::int64_t w = -1;
    const auto nodes = static_cast<std::int64_t>(n);
    while (v < nodes) {
      // The number of pairs skipped before the next edge: geometric.
      const double skip = std::floor(std::log(1.0 - random.unit()) / lp);
      if (skip >= pairs) break;
      w += 1 + static_cast<std::int64_t>(skip);
      while (w >= v && v < nodes) {
        w -= v;
        ++v;
      }
      if (v < nodes) edges.push_back({static_cast<std::uint32_t>(v), static_cast<std::uint32_t>(w)});
    }
  }
  return social_graph::undirected(n, edges);
}

social_graph barabasi_albert(std::uint32_t n, std::uint32_t m, std::uint64_t seed) {
  if (m < 1 || m >= n)
    throw graph_error("barabasi_albert: needs 1 <= m < n, not m = " + std::to_string(m) + ", n = " + std::to_string(n));
  std::vector<follow_edge> edges;
  edges.reserve(static_cast<std::size_t>(m) * (n - m));
  // Every node once per edge end: a uniform draw from it picks a node with
  // probability proportional to its degree.
  std::vector<std::uint32_t> repeated;
  repeated.reserve(2 * static_cast<std::size_t>(m) * (n - m));
  for (std::uint32_t i = 1; i <= m; ++i) {  // the star the nodes attach to
    edges.push_back({0, i});
    repeated.push_back(0);
  }
  for (std::uint32_t i = 1; i <= m; ++i) repeated.push_back(i);
  seeded_random random(seed);
  std::vector<std::uint32_t> targets;
  targets.reserve(m);
  for (std::uint32_t source = m + 1; source < n; ++source) {
    targets.clear();
    while (targets.size() < m) {
      const std::uint32_t x = repeated[random.below(repeated.size())];
      if (std::find(targets.begin(), targets.end(), x) == targets.end()) targets.push_back(x);
    }
    for (const std::uint32_t t : targets) edges.push_back({source, t});
    repeated.insert(repeated.end(), targets.begin(), targets.end());
    repeated.insert(repeated.end(), m, source);
  }
  return social_graph::undirected(n, edges);
}

social_graph watts_strogatz(std::uint32_t n, std::uint32_t k, double beta, std::uint64_t seed) {
  if (k % 2 != 0 || k >= n)
    throw graph_error("watts_strogatz: k must be even and below n, not k = " + std::to_string(k) +
                      ", n = " + std::to_string(n));
  if (!(beta >= 0.0 && beta <= 1.0))
    throw graph_error("watts_strogatz: beta must be within [0, 1], not " + std::to_string(beta));
  // Each node's neighbours while rewiring: a node's list stays about k long.
  std::vector<std::vector<std::uint32_t>> adjacent(n);
  for (std::uint32_t u = 0; u < n; ++u) adjacent[u].reserve(k);
  auto link = [&](std::uint32_t a, std::uint32_t b) {
    adjacent[a].push_back(b);
    adjacent[b].push_back(a);
  };
  auto unlink = [&](std::uint32_t a, std::uint32_t b) {
    std::erase(adjacent[a], b);
    std::erase(adjacent[b], a);
  };
  auto linked = [&](std::uint32_t a, std::uint32_t b) {
    return std::find(adjacent[a].begin(), adjacent[a].end(), b) != adjacent[a].end();
  };
  for (std::uint32_t j = 1; j <= k / 2; ++j)
    for (std::uint32_t u = 0; u < n; ++u) link(u, (u + j) % n);
  seeded_random random(seed);
  for (std::uint32_t j = 1; j <= k / 2; ++j) {
    for (std::uint32_t u = 0; u < n; ++u) {
      if (!(random.unit() < beta)) continue;
      std::uint32_t w = static_cast<std::uint32_t>(random.below(n));
      bool skip = false;
      while (w == u || linked(u, w)) {
        w = static_cast<std::uint32_t>(random.below(n));
        if (adjacent[u].size() >= n - 1) {
          skip = true;
          break;
        }
      }
      if (skip) continue;
      unlink(u, (u + j) % n);
      link(u, w);
    }
  }
  std::vector<follow_edge> edges;
  edges.reserve(static_cast<std::size_t>(n) * k / 2);
  for (std::uint32_t u = 0; u < n; ++u)
    for (const std::uint32_t w : adjacent[u])
      if (u < w) edges.push_back({u, w});
  adjacent = {};
  return social_graph::undirected(n, edges);
}

// ---------------------------------------------------------------- edge lists

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string_view unquote(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

std::optional<std::uint32_t> resolve(std::string_view field, const agent_directory& agents) {
  if (auto index = agents.find(field)) return index;
  if (field.empty() || field.size() > 10) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : field) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (value >= agents.size()) return std::nullopt;
  return static_cast<std::uint32_t>(value);
}

}  // namespace

social_graph load_edge_list(const std::string& path, const agent_directory& agents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw edge_list_error(path, 0, "cannot open the edge list");
  std::vector<follow_edge> follows;
  std::string text;
  std::size_t line = 0;
  bool header_possible = true;
  while (std::getline(in, text)) {
    ++line;
    const std::string_view row = trim(text);
    if (row.empty() || row.front() == '#') continue;
    const auto comma = row.find(',');
    if (comma == std::string_view::npos || row.find(',', comma + 1) != std::string_view::npos)
      throw edge_list_error(path, line, "expected two fields, follower,followee");
    const std::string_view follower = unquote(row.substr(0, comma));
    const std::string_view followee = unquote(row.substr(comma + 1));
    const auto a = resolve(follower, agents);
    const auto b = resolve(followee, agents);
    const bool header = header_possible && !a && !b;
    header_possible = false;
    if (header) continue;
    if (!a) throw edge_list_error(path, line, "unknown agent \"" + std::string(follower) + "\"");
    if (!b) throw edge_list_error(path, line, "unknown agent \"" + std::string(followee) + "\"");
    if (*a == *b) throw edge_list_error(path, line, "agent \"" + std::string(follower) + "\" follows itself");
    follows.push_back({*a, *b});
  }
  if (in.bad()) throw edge_list_error(path, line, "read error");
  return social_graph(agents.size(), follows);
}

social_graph make_graph(const graph_spec& spec, const agent_directory& agents, std::uint64_t seed,
                        const std::string& base_dir) {
  const std::uint32_t n = agents.size();
  switch (spec.kind) {
    case graph_kind::none:
      return social_graph(n, {});
    case graph_kind::edge_list: {
      std::filesystem::path path(spec.path);
      if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
      return load_edge_list(path.string(), agents);
    }
    case graph_kind::erdos_renyi:
      return erdos_renyi(n, spec.p, seed);
    case graph_kind::barabasi_albert:
      if (spec.m > std::numeric_limits<std::uint32_t>::max())
        throw graph_error("barabasi_albert: m = " + std::to_string(spec.m) + " is too large");
      return barabasi_albert(n, static_cast<std::uint32_t>(spec.m), seed);
    case graph_kind::watts_strogatz:
      if (spec.k > std::numeric_limits<std::uint32_t>::max())
        throw graph_error("watts_strogatz: k = " + std::to_string(spec.k) + " is too large");
      return watts_strogatz(n, static_cast<std::uint32_t>(spec.k), spec.beta, seed);
  }
  throw graph_error("make_graph: unknown graph kind");
}

}  // namespace troupe
