// The scenario run the resume tests kill: `troupe simulate --scenario` on a
// store that sends the process SIGKILL at a commit the test names, so that
// the kill lands at the same point of the run every time (a kill from
// outside lands wherever the run happens to be).
//
//   troupe_scenario_kill_child SCENARIO SEED STORE_URI EVENTS WHEN [--resume]
//
// WHEN is one of
//   before-round:R            before the world's round R is committed
//   before-step:S             before workflow step S (not a run of rounds) is committed
//   answered:THREAD:REQUEST   once THREAD holds the final answer of REQUEST
//   thread-suffix:SUFFIX      once a thread whose id ends with SUFFIX has a commit
// A run that ends without reaching that point exits 3.

#include "runtime/store/open_store.hpp"
#include "runtime/store/thread_lease.hpp"
#include "simulation/run_scenario.hpp"
#include "simulation/scenario_toml.hpp"

#include <csignal>
#include <cstdio>
#include <mutex>
#include <string>

using namespace troupe;

namespace {

struct kill_point {
  std::string kind;
  std::string thread;       // answered: the thread; thread-suffix: the suffix
  std::string request;      // answered
  std::int64_t number = 0;  // before-round, before-step
};

kill_point parse(const std::string& spec) {
  kill_point k;
  const auto colon = spec.find(':');
  k.kind = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (k.kind == "before-round" || k.kind == "before-step") {
    k.number = std::stoll(rest);
  } else if (k.kind == "answered") {
    const auto last = rest.rfind(':');
    k.thread = rest.substr(0, last);
    k.request = rest.substr(last + 1);
  } else if (k.kind == "thread-suffix") {
    k.thread = rest;
  } else {
    throw std::invalid_argument("unknown kill point " + spec);
  }
  return k;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Forwards everything to the real store; dies at the kill point.
class killing_store final : public thread_store {
 public:
  killing_store(std::shared_ptr<thread_store> inner, kill_point when) : inner_(std::move(inner)), when_(when) {}

  commit_path path() const override { return inner_->path(); }
  std::optional<commit_batching> batching() const override { return inner_->batching(); }
  stored<thread> load(const std::string& id) override { return inner_->load(id); }
  stored<std::uint64_t> append(const thread_view& t, std::uint64_t rev) override {
    before(t);
    auto r = inner_->append(t, rev);
    if (r) after(t);
    return r;
  }
  stored<std::uint64_t> append_fenced(const thread_view& t, std::uint64_t rev, const thread_lease& fence) override {
    before(t);
    auto r = inner_->append_fenced(t, rev, fence);
    if (r) after(t);
    return r;
  }
  void append_queued(thread_view t, std::uint64_t rev, const thread_lease* fence, append_done done) override {
    before(t);
    inner_->append_queued(t, rev, fence, [this, t, done = std::move(done)](stored<std::uint64_t> r) {
      if (r) after(t);
      done(std::move(r));
    });
  }
  void set_queue_deadline(std::chrono::milliseconds d) override { inner_->set_queue_deadline(d); }
  stored<thread_lease> acquire_lease(const std::string& id, const std::string& owner, std::int64_t now_ms,
                                     std::chrono::milliseconds ttl) override {
    return inner_->acquire_lease(id, owner, now_ms, ttl);
  }
  bool queues_lease_takes() const override { return inner_->queues_lease_takes(); }
  void acquire_lease_queued(const std::string& id, const std::string& owner, std::int64_t now_ms,
                            std::chrono::milliseconds ttl, lease_done done) override {
    inner_->acquire_lease_queued(id, owner, now_ms, ttl, std::move(done));
  }
  void release_lease(const std::string& id, const thread_lease& held) override { inner_->release_lease(id, held); }
  void release_lease_queued(const std::string& id, const thread_lease& held, std::function<void()> done) override {
    inner_->release_lease_queued(id, held, std::move(done));
  }
  std::vector<std::string> list() override { return inner_->list(); }
  bool remove(const std::string& id) override { return inner_->remove(id); }
  stored<thread> fork(const std::string& id, std::uint64_t at, const std::string& new_id,
                      std::int64_t now_ms) override {
    return inner_->fork(id, at, new_id, now_ms);
  }

 private:
  static bool is_world(const thread_view& t) { return t.id().rfind("simulation:", 0) == 0; }

  void before(const thread_view& t) {
    if (!is_world(t) || t.empty()) return;
    const entry& next = *t.last();
    const boost::json::object p = next.payload.to_json();
    if (when_.kind == "before-round" && next.kind == "world_round" && p.at("round") == when_.number) die();
    if (when_.kind == "before-step" && next.kind == "world_step" && p.at("step") == when_.number) die();
  }

  void after(const thread_view& t) {
    if (when_.kind == "thread-suffix" && ends_with(t.id(), when_.thread)) die();
    if (when_.kind != "answered" || t.id() != when_.thread || t.empty()) return;
    const entry& last = *t.last();
    if (last.kind != "message") return;
    const boost::json::object refs = last.refs.to_json();
    const boost::json::object payload = last.payload.to_json();
    const auto* id = refs.if_contains("request_id");
    const auto* role = payload.if_contains("role");
    if (id && id->is_string() && id->get_string() == when_.request && role && *role == "assistant") die();
  }

  [[noreturn]] static void die() {
    std::fflush(nullptr);
    ::raise(SIGKILL);
    std::abort();
  }

  std::shared_ptr<thread_store> inner_;
  kill_point when_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && !(argc == 7 && std::string(argv[6]) == "--resume")) {
    std::fprintf(stderr, "usage: %s SCENARIO SEED STORE_URI EVENTS WHEN [--resume]\n", argv[0]);
    return 2;
  }
  scenario s = read_scenario(argv[1]);
  s.seed = std::stoull(argv[2]);
  auto opened = open_store(argv[3]);
  if (!opened) {
    std::fprintf(stderr, "%s\n", opened.error().message.c_str());
    return 2;
  }
  scenario_run_options options;
  options.store = std::make_shared<killing_store>(opened->threads, parse(argv[5]));
  options.event_log = argv[4];
  options.resume = argc == 7;
  scenario_progress progress;
  run_scenario(s, options, progress);
  return 3;
}
