// A node of the clustered-runtime tests: a cluster_node on loopback with
// the test timings (support/cluster_nodes.hpp, drains bounded at 5 s), the
// agents agent-0 … agent-11 and a model that answers "answer to: QUESTION
// (by NODE_ID)" (on the node NODE_ID, a question that begins "stall on
// NODE_ID" gets no answer: its model call runs until the node dies). Prints
// "ready NODE_ID" once it joined, then takes commands on stdin, one a line:
//
//   ask AGENT THREAD REQUEST_ID QUESTION   → later "reply REQUEST_ID ok ANSWER"
//                                             or "reply REQUEST_ID error TYPE MESSAGE"
//
// At the end of stdin it stops as a killed node would (no leave). On
// SIGTERM it leaves gracefully: its shards drain, the asks it took finish,
// it prints "left true" (or "left false": shards were still held at the
// leave's timeout) and exits.
//
//   troupe_cluster_join_child CONNINFO NODE_ID SECRET

#include "actors/cluster/cluster_node.hpp"
#include "runtime/llm/scripted_provider.hpp"
#include "support/cluster_nodes.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <string>

using namespace troupe;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  // Blocked before any thread starts, so that every thread inherits the
  // mask and SIGTERM arrives only through the signalfd.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &term, nullptr) != 0) return 3;
  const int term_fd = signalfd(-1, &term, SFD_CLOEXEC);
  if (term_fd < 0) return 3;

  const std::string node_id = argv[2];
  const std::string stall = "stall on " + node_id;
  auto model = std::make_shared<scripted_provider>([node_id, stall](const llm_stream& s) {
    const std::string question(s.messages.back().content);
    scripted_reply r = scripted_reply::text("answer to: " + question + " (by " + node_id + ")");
    if (question.starts_with(stall)) r.delay = std::chrono::hours(1);
    return r;
  });
  cluster_node_options o;
  o.cluster = testing::test_node(argv[1], node_id);
  o.cluster.drain_timeout = 5s;
  o.transport.secret = argv[3];
  o.runtime.provider = model;
  o.runtime.telemetry = std::make_shared<log_sink>(false);
  // Thread leases that outlive the test: a survivor can take a dead node's
  // threads only because a new grant of their shard revokes its leases.
  o.runtime.lease_ttl = std::chrono::hours(1);
  for (int i = 0; i < 12; ++i) o.agents.push_back({.id = "agent-" + std::to_string(i), .model = "m"});
  // Outlive the node, whose last replies may come as it closes.
  std::mutex out;
  std::condition_variable answered;
  std::size_t outstanding = 0;
  cluster_node n(std::move(o));
  std::printf("ready %s\n", n.id().c_str());
  std::fflush(stdout);

  auto ask = [&](const std::string& line) {
    std::istringstream in(line);
    std::string word, agent, thread_id, request_id, question;
    in >> word >> agent >> thread_id >> request_id;
    std::getline(in >> std::ws, question);
    if (word != "ask") return;
    {
      std::lock_guard lock(out);
      ++outstanding;
    }
    n.agent(agent).ask(question, {.thread_id = thread_id,
                                  .request_id = request_id,
                                  .on_reply = [&out, &answered, &outstanding, request_id](const reply& r) {
                                    std::lock_guard lock(out);
                                    if (r.ok())
                                      std::printf("reply %s ok %s\n", request_id.c_str(),
                                                  std::get<std::string>(r.outcome).c_str());
                                    else
                                      std::printf("reply %s error %s %s\n", request_id.c_str(),
                                                  std::get<error_info>(r.outcome).type.c_str(),
                                                  std::get<error_info>(r.outcome).message.c_str());
                                    std::fflush(stdout);
                                    --outstanding;
                                    answered.notify_all();
                                  }});
  };

  std::string buffer;
  for (;;) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {term_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;  // interrupted
    // The asks written before SIGTERM are taken first: stdin is read
    // while it has anything.
    if (fds[0].revents) {
      char chunk[4096];
      const ssize_t got = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (got <= 0) return 0;  // the end of stdin: closes without leaving, as a killed node
      buffer.append(chunk, static_cast<std::size_t>(got));
      for (auto nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n')) {
        ask(buffer.substr(0, nl));
        buffer.erase(0, nl + 1);
      }
      continue;
    }
    if (fds[1].revents & POLLIN) {
      // Told to go: the shards drain and move, then the asks this node
      // routes (to any holder) finish, then it closes.
      const bool left = n.leave(30s);
      std::unique_lock lock(out);
      answered.wait_for(lock, 30s, [&] { return outstanding == 0; });
      std::printf("left %s\n", left ? "true" : "false");
      std::fflush(stdout);
      return 0;
    }
  }
}
