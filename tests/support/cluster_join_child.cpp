// A node of the clustered-runtime tests: a cluster_node on loopback with
// the test timings (support/cluster_nodes.hpp), the agents agent-0 …
// agent-11 and a model that answers "answer to: QUESTION" (on the node
// NODE_ID, a question that begins "stall on NODE_ID" gets no answer: its
// model call runs until the node dies). Prints "ready NODE_ID" once it
// joined, then takes commands on stdin, one a line:
//
//   ask AGENT THREAD REQUEST_ID QUESTION   → later "reply REQUEST_ID ok ANSWER"
//                                             or "reply REQUEST_ID error TYPE MESSAGE"
//
//   troupe_cluster_join_child CONNINFO NODE_ID SECRET

#include "actors/cluster/cluster_node.hpp"
#include "runtime/llm/scripted_provider.hpp"
#include "support/cluster_nodes.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>

using namespace troupe;

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const std::string stall = std::string("stall on ") + argv[2];
  auto model = std::make_shared<scripted_provider>([stall](const llm_stream& s) {
    const std::string question(s.messages.back().content);
    scripted_reply r = scripted_reply::text("answer to: " + question);
    if (question.starts_with(stall)) r.delay = std::chrono::hours(1);
    return r;
  });
  cluster_node_options o;
  o.cluster = testing::test_node(argv[1], argv[2]);
  o.transport.secret = argv[3];
  o.runtime.provider = model;
  o.runtime.telemetry = std::make_shared<log_sink>(false);
  // Thread leases that outlive the test: a survivor can take a dead node's
  // threads only because a new grant of their shard revokes its leases.
  o.runtime.lease_ttl = std::chrono::hours(1);
  for (int i = 0; i < 12; ++i) o.agents.push_back({.id = "agent-" + std::to_string(i), .model = "m"});
  std::mutex out;  // outlives the node, whose last replies may come as it closes
  cluster_node n(std::move(o));
  std::printf("ready %s\n", n.id().c_str());
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string word, agent, thread_id, request_id, question;
    in >> word >> agent >> thread_id >> request_id;
    std::getline(in >> std::ws, question);
    if (word != "ask") continue;
    n.agent(agent).ask(
        question, {.thread_id = thread_id, .request_id = request_id, .on_reply = [&out, request_id](const reply& r) {
                     std::lock_guard lock(out);
                     if (r.ok())
                       std::printf("reply %s ok %s\n", request_id.c_str(), std::get<std::string>(r.outcome).c_str());
                     else
                       std::printf("reply %s error %s %s\n", request_id.c_str(),
                                   std::get<error_info>(r.outcome).type.c_str(),
                                   std::get<error_info>(r.outcome).message.c_str());
                     std::fflush(stdout);
                   }});
  }
}
