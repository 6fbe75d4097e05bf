// What the thread stores cost: commit latency (p50, p99) and throughput
// with 1 and with 100 concurrent writers, the time to load a
// 100,000-entry thread and to read one request's entries of it, bytes on disk per entry at 1,000 and 100,000
// turns, and the CPU one commit costs (the PostgreSQL server's apart) when
// 10,000 threads commit at once (--only-many 1 runs that part alone).
// SQLite always; PostgreSQL when TROUPE_TEST_POSTGRES names a
// server (scripts/bench.sh starts one); the memory store as the floor.
// "sqlite+fsync" is SQLite with every transaction synced to disk, where
// group commit shares one fsync among many commits.
//
//   store_bench [--repeat 3] [--commits 400] [--load-entries 100000] [--turns 100000] [--pg-pool 16]
//               [--many-threads 10000] [--rounds 10] [--only-many 1] [--without-request-index 1]
//
// A commit is one step's entries: two entries (a user message and an
// assistant message of realistic length). A turn, for the size figures, is
// four entries: question, tool call, tool result, answer.

#include "bench/bench_support.hpp"
#include "runtime/clock.hpp"
#include "support/store_backends.hpp"

#include <sqlite3.h>

#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

using namespace troupe;
using namespace troupe::testing;
namespace json = boost::json;

namespace {

const std::string question_text =
    "Could you look up the opening hours of the Lisbon Oceanarium for next Saturday, and tell me whether it "
    "is worth going with two children?";
const std::string answer_text =
    "The Oceanarium is open from 10:00 to 19:00 on Saturdays, with the last entry at 18:00. With two children "
    "it is well worth it: plan about two and a half hours, book tickets online to skip the queue, and see the "
    "central tank first, before the school groups arrive in the late morning. A family ticket covers two adults "
    "and two children under twelve.";

std::vector<entry_draft> step_drafts(int i) {
  return {{"message", {{"role", "user"}, {"content", question_text}}, {{"request_id", "req_" + std::to_string(i)}}},
          {"message",
           {{"role", "assistant"}, {"content", answer_text}},
           {{"request_id", "req_" + std::to_string(i)}, {"iteration", 1}}}};
}

std::vector<entry_draft> turn_drafts(int i) {
  const json::object refs{{"request_id", "req_" + std::to_string(i)},
                          {"call_id", "call_" + std::to_string(i)},
                          {"tool_call_id", "tc_" + std::to_string(i)},
                          {"iteration", 1}};
  return {{"message", {{"role", "user"}, {"content", question_text}}, {{"request_id", "req_" + std::to_string(i)}}},
          {"tool_call",
           {{"name", "opening_hours"}, {"arguments", {{"place", "Oceanario de Lisboa"}, {"day", "saturday"}}}},
           refs},
          {"tool_result",
           {{"name", "opening_hours"}, {"result", {{"open", "10:00"}, {"close", "19:00"}, {"last_entry", "18:00"}}}},
           refs},
          {"message", {{"role", "assistant"}, {"content", answer_text}}, refs}};
}

struct commit_figures {
  double p50_us = 0, p99_us = 0, entries_per_s = 0, batching = 0;
};

// `writers` threads, each committing `commits` steps to its own thread.
template <class Backend>
commit_figures measure_commits(Backend& backend, int writers, int commits) {
  thread_store& store = backend.threads();
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(writers));
  std::vector<std::thread> pool;
  const auto started = std::chrono::steady_clock::now();
  for (int w = 0; w < writers; ++w)
    pool.emplace_back([&, w] {
      sequential_ids ids;
      thread t("writer-" + std::to_string(w), 1);
      auto& mine = latencies[static_cast<std::size_t>(w)];
      mine.reserve(static_cast<std::size_t>(commits));
      for (int i = 0; i < commits; ++i) {
        const std::uint64_t rev = t.rev();
        t.append(step_drafts(i), i, ids);
        const std::int64_t before = steady_us();
        if (!store.append(t, rev)) std::abort();
        mine.push_back(static_cast<double>(steady_us() - before));
      }
    });
  for (auto& p : pool) p.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  const bench::sorted_samples latency(std::move(all));
  commit_figures f;
  f.p50_us = latency.at(0.5);
  f.p99_us = latency.at(0.99);
  f.entries_per_s = 2.0 * writers * commits / seconds;
  if constexpr (std::is_same_v<Backend, sqlite_backend>) {
    const auto s = backend.store->stats();
    f.batching = static_cast<double>(s.commits) / static_cast<double>(s.transactions);
  }
  return f;
}

// What one commit costs when many agents commit at once, as in a
// simulation: `threads` threads, each leased, each committing one entry a
// round through append_queued (fenced), the rounds waited for in turn. CPU
// is this process's, all its threads (the one that makes the entries, as an
// agent would, and the store's), and the PostgreSQL server's apart.
struct many_threads_figures {
  double cpu_us_per_commit = 0, server_cpu_us_per_commit = 0, commits_per_s = 0, batching = 0;
};

// Fields 4 (the parent's pid) and 14..17 (utime, stime, cutime, cstime, in
// clock ticks) of /proc/<pid>/stat; nullopt when the process is gone.
struct proc_times {
  long parent = 0;
  double own = 0, reaped_children = 0;
};

std::optional<proc_times> times_of(const std::filesystem::path& proc_dir) {
  std::ifstream stat(proc_dir / "stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto name_end = text.rfind(')');  // the name may hold spaces and parentheses
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(name_end + 2));  // from field 3 on
  std::string skipped;
  proc_times t;
  double utime = 0, stime = 0, cutime = 0, cstime = 0;
  fields >> skipped >> t.parent;  // fields 3 and 4
  for (int i = 5; i <= 13; ++i) fields >> skipped;
  if (!(fields >> utime >> stime >> cutime >> cstime)) return std::nullopt;
  t.own = utime + stime;
  t.reaped_children = cutime + cstime;
  return t;
}

// CPU seconds of one PostgreSQL server on this machine: its postmaster, the
// backends it runs now and those that have exited (in the postmaster's
// children's time). What a commit costs the server is what limits
// PostgreSQL when troupe and the server share the cores.
double server_cpu_seconds(long postmaster) {
  double ticks = 0;
  for (const auto& dir : std::filesystem::directory_iterator("/proc")) {
    const std::string name = dir.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const long pid = std::stol(name);
    const auto t = times_of(dir.path());
    if (!t) continue;
    if (pid == postmaster)
      ticks += t->own + t->reaped_children;
    else if (t->parent == postmaster)
      ticks += t->own;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The postmaster of the server behind `uri`, when it runs on this machine:
// the parent of this connection's backend.
std::optional<long> local_postmaster(const std::string& uri) {
  PGconn* c = PQconnectdb(uri.c_str());
  std::optional<long> out;
  if (PQstatus(c) == CONNECTION_OK) {
    const auto backend = std::to_string(PQbackendPID(c));
    if (auto t = times_of(std::filesystem::path("/proc") / backend)) out = t->parent;
  }
  PQfinish(c);
  return out;
}

template <class Backend>
many_threads_figures measure_many_threads(Backend& backend, int threads, int rounds) {
  thread_store& store = backend.threads();
  sequential_ids ids;
  std::vector<thread> ts;
  std::vector<thread_lease> leases(static_cast<std::size_t>(threads));
  ts.reserve(static_cast<std::size_t>(threads));
  std::mutex m;
  std::condition_variable all_done;
  int waiting = threads;
  // Leases taken as agents take them at load: queued, so that a store syncing
  // every transaction takes them in a few.
  for (int i = 0; i < threads; ++i) {
    ts.emplace_back("agent-" + std::to_string(i) + ":default", 1);
    store.acquire_lease_queued(ts.back().id(), "store_bench", wall_clock_ms(), std::chrono::minutes(10),
                               [&, i](stored<thread_lease> taken) {
                                 if (!taken) std::abort();
                                 std::lock_guard lock(m);
                                 leases[static_cast<std::size_t>(i)] = *taken;
                                 if (--waiting == 0) all_done.notify_one();
                               });
  }
  {
    std::unique_lock lock(m);
    all_done.wait(lock, [&] { return waiting == 0; });
  }
  std::optional<long> postmaster;
  if constexpr (std::is_same_v<Backend, postgres_backend>) postmaster = local_postmaster(backend.uri());
  const std::optional<commit_batching> batching_before = store.batching();
  const auto started = std::chrono::steady_clock::now();
  const double cpu_before = bench::process_cpu_seconds();
  const double server_before = postmaster ? server_cpu_seconds(*postmaster) : 0;
  for (int r = 0; r < rounds; ++r) {
    {
      std::lock_guard lock(m);
      waiting = threads;
    }
    for (int i = 0; i < threads; ++i) {
      thread& t = ts[static_cast<std::size_t>(i)];
      const std::uint64_t rev = t.rev();
      t.append(entry_draft{"message",
                           {{"role", "user"},
                            {"content", "Question " + std::to_string(r) + " from agent " + std::to_string(i) + "."}},
                           {{"request_id", "req_" + std::to_string(r) + "_" + std::to_string(i)}, {"iteration", 1}}},
               r, ids);
      store.append_queued(t, rev, &leases[static_cast<std::size_t>(i)], [&](stored<std::uint64_t> done) {
        if (!done) std::abort();
        std::lock_guard lock(m);
        if (--waiting == 0) all_done.notify_one();
      });
    }
    std::unique_lock lock(m);
    all_done.wait(lock, [&] { return waiting == 0; });
  }
  const double cpu = bench::process_cpu_seconds() - cpu_before;
  const double server_cpu = postmaster ? server_cpu_seconds(*postmaster) - server_before : 0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double commits = static_cast<double>(threads) * rounds;
  many_threads_figures f;
  f.cpu_us_per_commit = cpu * 1e6 / commits;
  f.server_cpu_us_per_commit = server_cpu * 1e6 / commits;
  f.commits_per_s = commits / seconds;
  // A store may answer a batch's commits before it counts the batch: wait
  // (briefly) for the count to catch up with the commits answered.
  std::optional<commit_batching> b = store.batching();
  for (int tries = 0; b && b->commits - batching_before->commits < static_cast<std::uint64_t>(commits) && tries < 1000;
       ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    b = store.batching();
  }
  if (b)
    f.batching = static_cast<double>(b->commits - batching_before->commits) /
                 static_cast<double>(b->transactions - batching_before->transactions);
  return f;
}

template <class Backend, class... Args>
void run_many_threads(const char* name, int repeat, int threads, int rounds, Args... args) {
  std::vector<double> cpu, server_cpu, rate, batching;
  for (int r = 0; r < repeat; ++r) {
    Backend backend(args...);
    const many_threads_figures f = measure_many_threads(backend, threads, rounds);
    cpu.push_back(f.cpu_us_per_commit);
    server_cpu.push_back(f.server_cpu_us_per_commit);
    rate.push_back(f.commits_per_s);
    batching.push_back(f.batching);
  }
  std::printf("%-12s %d threads x %d commits of one entry: %6.1f us of CPU per commit", name, threads, rounds,
              bench::median(cpu));
  if (bench::median(server_cpu) > 0) std::printf(" (+ %.1f us in the server)", bench::median(server_cpu));
  std::printf("  %9.0f commits/s", bench::median(rate));
  if (bench::median(batching) > 0) std::printf("  %.1f commits per transaction", bench::median(batching));
  std::printf("\n");
  std::fflush(stdout);
}

void run_many(int repeat, int threads, int rounds, bool postgres, std::size_t pg_pool) {
  run_many_threads<memory_backend>("memory", repeat, threads, rounds);
  run_many_threads<sqlite_backend>("sqlite", repeat, threads, rounds);
  run_many_threads<sqlite_backend>("sqlite+fsync", repeat, threads, rounds, sqlite_options{.sync_every_commit = true});
  if (postgres)
    run_many_threads<postgres_backend>("postgres", repeat, threads, rounds, postgres_options{.pool_size = pg_pool});
}

// Milliseconds to load a thread of `entries` entries, and to read one
// request's entries of it (medians of `repeat`).
struct load_figures {
  double load_ms = 0;     // the whole thread
  double request_ms = 0;  // one request's entries (request_entries), from the thread's middle
};

template <class Backend>
load_figures measure_load(Backend& backend, std::size_t entries, int repeat) {
  thread_store& store = backend.threads();
  sequential_ids ids;
  thread t("long", 1);
  for (std::size_t done = 0; done < entries;) {
    const std::uint64_t rev = t.rev();
    std::vector<entry_draft> chunk;
    for (int i = 0; i < 1000 && done < entries; ++i, ++done)
      chunk.push_back(step_drafts(static_cast<int>(done))[done % 2]);
    t.append(std::move(chunk), static_cast<std::int64_t>(done), ids);
    if (!store.append(t, rev)) std::abort();
  }
  std::vector<double> ms, request_ms;
  const std::string middle = "req_" + std::to_string(entries / 2);
  for (int r = 0; r < repeat; ++r) {
    auto started = std::chrono::steady_clock::now();
    auto loaded = store.load("long");
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    if (!loaded || loaded->size() != entries) std::abort();
    started = std::chrono::steady_clock::now();
    auto one = store.request_entries("long", middle);
    request_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    if (!one || one->size() != 1) std::abort();
  }
  return {bench::median(ms), bench::median(request_ms)};
}

// --without-request-index 1: the store without the index request_entries
// reads by, as before it, to measure what the index costs commits.
bool without_request_index = false;

void drop_request_index(memory_backend&) {}
void drop_request_index(sqlite_backend& b) {
  sqlite3* db = nullptr;
  if (sqlite3_open(b.path.c_str(), &db) != SQLITE_OK ||
      sqlite3_exec(db, "DROP INDEX entries_by_request", nullptr, nullptr, nullptr) != SQLITE_OK)
    std::abort();
  sqlite3_close(db);
}
void drop_request_index(postgres_backend& b) {
  b.sql([](PGconn* c) {
    PGresult* r = PQexec(c, "DROP INDEX entries_by_request");
    if (PQresultStatus(r) != PGRES_COMMAND_OK) std::abort();
    PQclear(r);
  });
}

// Writes `turns` turns (committed 100 turns at a time) and returns the
// entries written.
std::size_t write_turns(thread_store& store, int turns) {
  sequential_ids ids;
  thread t("sized", 1);
  for (int done = 0; done < turns;) {
    const std::uint64_t rev = t.rev();
    std::vector<entry_draft> chunk;
    for (int i = 0; i < 100 && done < turns; ++i, ++done)
      for (auto& d : turn_drafts(done)) chunk.push_back(std::move(d));
    t.append(std::move(chunk), done, ids);
    if (!store.append(t, rev)) std::abort();
  }
  return t.size();
}

double sqlite_bytes_per_entry(int turns) {
  sqlite_backend backend;
  const std::size_t entries = write_turns(backend.threads(), turns);
  backend.store.reset();  // closing checkpoints the WAL into the file
  sqlite3* db = nullptr;
  sqlite3_open(backend.path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  std::uintmax_t bytes = std::filesystem::file_size(backend.path);
  for (const char* suffix : {"-wal"})
    if (std::filesystem::exists(backend.path.string() + suffix))
      bytes += std::filesystem::file_size(backend.path.string() + suffix);
  return static_cast<double>(bytes) / static_cast<double>(entries);
}

double postgres_bytes_per_entry(int turns) {
  postgres_backend backend;
  const std::size_t entries = write_turns(backend.threads(), turns);
  PGconn* c = PQconnectdb(backend.uri().c_str());
  PGresult* r = PQexec(c, "VACUUM ANALYZE entries");
  PQclear(r);
  r = PQexec(c, "SELECT pg_total_relation_size('entries') + pg_total_relation_size('threads')");
  const double bytes = PQresultStatus(r) == PGRES_TUPLES_OK ? std::stod(PQgetvalue(r, 0, 0)) : 0;
  PQclear(r);
  PQfinish(c);
  return bytes / static_cast<double>(entries);
}

void print_commits(const char* store, int writers, const std::vector<commit_figures>& runs, double baseline_eps) {
  std::vector<double> p50, p99, eps, batching;
  for (const auto& f : runs) {
    p50.push_back(f.p50_us);
    p99.push_back(f.p99_us);
    eps.push_back(f.entries_per_s);
    batching.push_back(f.batching);
  }
  const double e = bench::median(eps);
  std::printf("%-12s %3d writer%s  commit p50 %8.0f us  p99 %8.0f us  %9.0f entries/s  (%.2fx one writer)", store,
              writers, writers == 1 ? " " : "s", bench::median(p50), bench::median(p99), e,
              baseline_eps > 0 ? e / baseline_eps : 1.0);
  if (bench::median(batching) > 0) std::printf("  %.1f commits per transaction", bench::median(batching));
  std::printf("\n");
}

template <class Backend, class... Args>
void run_store(const char* name, int repeat, int commits, std::size_t load_entries, Args... args) {
  double one_writer = 0;
  for (int writers : {1, 100}) {
    std::vector<commit_figures> runs;
    for (int r = 0; r < repeat; ++r) {
      Backend backend(args...);
      if (without_request_index) drop_request_index(backend);
      // Fewer commits each with 100 writers: the same order of total work.
      runs.push_back(measure_commits(backend, writers, writers == 1 ? commits : std::max(10, commits / 10)));
    }
    print_commits(name, writers, runs, one_writer);
    if (writers == 1) {
      std::vector<double> eps;
      for (const auto& f : runs) eps.push_back(f.entries_per_s);
      one_writer = bench::median(eps);
    }
  }
  if (load_entries == 0) return;
  Backend backend(args...);
  if (without_request_index) drop_request_index(backend);
  const load_figures f = measure_load(backend, load_entries, repeat);
  std::printf("%-12s load a %zu-entry thread: %.1f ms; read one request of it: %.3f ms (medians of %d)\n", name,
              load_entries, f.load_ms, f.request_ms, repeat);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int repeat = static_cast<int>(bench::flag(argc, argv, "--repeat", 3));
  const int commits = static_cast<int>(bench::flag(argc, argv, "--commits", 400));
  const std::size_t load_entries = bench::flag(argc, argv, "--load-entries", 100000);
  without_request_index = bench::flag(argc, argv, "--without-request-index", 0) != 0;
  const int turns = static_cast<int>(bench::flag(argc, argv, "--turns", 100000));
  const std::size_t pg_pool = bench::flag(argc, argv, "--pg-pool", 16);
  const int many = static_cast<int>(bench::flag(argc, argv, "--many-threads", 10000));
  const int rounds = static_cast<int>(bench::flag(argc, argv, "--rounds", 10));
  const bool only_many = bench::flag(argc, argv, "--only-many", 0) != 0;
  const bool postgres = postgres_backend().ready();
  if (only_many) {
    run_many(repeat, many, rounds, postgres, pg_pool);
    return 0;
  }

  std::printf("store_bench: commits of 2 entries (~%zu bytes of text), medians of %d runs\n",
              question_text.size() + answer_text.size(), repeat);
  run_store<memory_backend>("memory", repeat, commits, load_entries);
  run_store<sqlite_backend>("sqlite", repeat, commits, load_entries);
  run_store<sqlite_backend>("sqlite+fsync", repeat, commits / 4, 0, sqlite_options{.sync_every_commit = true});
  if (postgres)
    run_store<postgres_backend>("postgres", repeat, commits, load_entries, postgres_options{.pool_size = pg_pool});
  else
    std::printf("postgres: skipped (TROUPE_TEST_POSTGRES is unset; scripts/bench.sh starts a server)\n");
  run_many(repeat, many, rounds, postgres, pg_pool);

  for (int n : {1000, turns}) {
    std::printf("sqlite    %6d turns (%d entries): %.0f bytes/entry on disk\n", n, 4 * n, sqlite_bytes_per_entry(n));
    if (postgres)
      std::printf("postgres  %6d turns (%d entries): %.0f bytes/entry on disk\n", n, 4 * n,
                  postgres_bytes_per_entry(n));
    std::fflush(stdout);
  }
}
