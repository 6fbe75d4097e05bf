// troupe cluster status: the nodes of a cluster and who holds each shard,
// as its tables in PostgreSQL hold them (docs/cluster.md).

#include "apps/commands.hpp"
#include "json/json_text.hpp"
#include "runtime/cluster/cluster_options.hpp"
#include "runtime/cluster/cluster_status.hpp"

#include <boost/json.hpp>

#include <iomanip>
#include <iostream>
#include <sstream>

namespace troupe::cli {

namespace json = boost::json;

namespace {

json::object status_json(const cluster_status& s) {
  json::array nodes, shards;
  for (const node_info& n : s.nodes)
    nodes.push_back({{"id", n.id},
                     {"address", n.address},
                     {"build_id", n.build_id},
                     {"state", to_string(n.state)},
                     {"heartbeat_age_ms", n.heartbeat_age.count()},
                     {"up_for_ms", n.up_for.count()},
                     {"shards_held", n.shards_held}});
  for (const shard_info& h : s.shard_table)
    shards.push_back({{"shard", h.shard},
                      {"holder", h.holder.empty() ? json::value(nullptr) : json::value(h.holder)},
                      {"epoch", h.epoch},
                      {"lease_left_ms", h.lease_left.count()}});
  return {{"shards", s.shards}, {"nodes", std::move(nodes)}, {"shard_table", std::move(shards)}};
}

std::string seconds(std::chrono::milliseconds d) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << static_cast<double>(d.count()) / 1000.0 << "s";
  return out.str();
}

void print_text(const cluster_status& s) {
  std::cout << s.nodes.size() << " node(s), " << s.shards << " shards\n\n";
  std::cout << std::left << std::setw(40) << "NODE" << std::setw(24) << "ADDRESS" << std::setw(9) << "STATE"
            << std::setw(11) << "HEARTBEAT"
            << "SHARDS\n";
  for (const node_info& n : s.nodes)
    std::cout << std::setw(40) << n.id << std::setw(24) << (n.address.empty() ? "-" : n.address) << std::setw(9)
              << to_string(n.state) << std::setw(11) << (seconds(n.heartbeat_age) + " ago") << n.shards_held << "\n";
  std::cout << "\n"
            << std::setw(7) << "SHARD" << std::setw(40) << "HOLDER" << std::setw(8) << "EPOCH"
            << "LEASE LEFT\n";
  for (const shard_info& h : s.shard_table)
    std::cout << std::setw(7) << h.shard << std::setw(40) << (h.holder.empty() ? "-" : h.holder) << std::setw(8)
              << h.epoch << (h.lease_left.count() > 0 ? seconds(h.lease_left) : "run out") << "\n";
}

}  // namespace

CLI::App* add_cluster_command(CLI::App& app, cluster_command_options& o) {
  CLI::App* cluster = app.add_subcommand("cluster", "A cluster of troupe nodes kept in PostgreSQL.");
  cluster->require_subcommand(1);
  CLI::App* status = cluster->add_subcommand("status", "The nodes, and who holds each shard.");
  status->add_option("--cluster", o.cluster, "The cluster's database: postgres://USER@HOST:PORT/DB")->required();
  status->add_flag("--json", o.json, "Print JSON instead of text");
  return cluster;
}

int run_cluster(const cluster_command_options& o) {
  try {
    const cluster_status s = read_cluster_status(o.cluster);
    if (o.json)
      std::cout << json_text(status_json(s)) << "\n";
    else
      print_text(s);
    return 0;
  } catch (const cluster_error& e) {
    if (o.json)
      std::cout << json_text(json::object{{"error", {{"message", e.what()}}}}) << "\n";
    else
      std::cerr << "troupe: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace troupe::cli
