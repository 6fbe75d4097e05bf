#include "runtime/net/http_client.hpp"
#include "runtime/detail/thrown_by.hpp"

#include "runtime/detail/text.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace troupe {

namespace {

using steady = std::chrono::steady_clock;

// libcurl's global set-up, once per process.
struct curl_global {
  curl_global() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

}  // namespace

std::string_view http_response_head::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return {};
}

// One transfer. Its callbacks run under `gate`, and cancel() takes the gate:
// so once cancel() returns, no callback runs or will run.
struct transfer {
  std::uint64_t id = 0;
  http_request request;
  http_callbacks callbacks;
  CURL* easy = nullptr;
  curl_slist* header_list = nullptr;
  std::recursive_mutex gate;
  bool cancelled = false;  // under gate
  http_response_head head;
  bool head_sent = false;
  steady::time_point started;
  steady::time_point last_byte;
  bool got_byte = false;
  // Set when one of this transfer's callbacks threw: the transfer ends with it.
  std::optional<error_info> failure;
  std::size_t received = 0;  // body bytes

  ~transfer() {
    if (header_list) curl_slist_free_all(header_list);
    if (easy) curl_easy_cleanup(easy);
  }

  void send_head() {
    if (head_sent) return;
    head_sent = true;
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (status) head.status = static_cast<int>(status);
    std::lock_guard lock(gate);
    if (!cancelled && callbacks.on_head) guarded([&] { callbacks.on_head(head); });
  }

  // Runs one of the caller's callbacks on the I/O thread, which serves every
  // other transfer too: an exception fails this transfer only (curl is told
  // to abort it, and on_done reports callback_failed).
  template <class F>
  bool guarded(F&& f) {
    auto thrown = thrown_by(std::forward<F>(f));
    if (!thrown) return true;
    failure = error_info::of(error_type::callback_failed, "a response callback threw: " + *thrown, 1);
    return false;
  }

  static size_t on_header(char* data, size_t size, size_t n, void* self) {
    auto* t = static_cast<transfer*>(self);
    const std::string_view line(data, size * n);
    t->touch();
    const bool kept = t->guarded([&] {
      if (line.rfind("HTTP/", 0) == 0) {  // a new status line: a fresh set of headers
        t->head.headers.clear();
        const auto space = line.find(' ');
        if (space != std::string_view::npos) t->head.status = std::atoi(std::string(line.substr(space + 1, 3)).c_str());
      } else if (const auto colon = line.find(':'); colon != std::string_view::npos) {
        t->head.headers.emplace_back(ascii_lower(trimmed(line.substr(0, colon))),
                                     std::string(trimmed(line.substr(colon + 1))));
      }
    });
    return kept ? size * n : 0;  // 0 makes curl abort the transfer
  }

  static size_t on_write(char* data, size_t size, size_t n, void* self) {
    auto* t = static_cast<transfer*>(self);
    t->touch();
    t->send_head();
    std::lock_guard lock(t->gate);
    if (t->cancelled || t->failure) return 0;  // makes curl abort the transfer
    t->received += size * n;
    const std::size_t cap = t->request.max_response_bytes;
    if (cap && t->received > cap) {
      t->failure =
          error_info::of(error_type::response_too_large, "the response exceeded " + std::to_string(cap) + " bytes", 1);
      return 0;
    }
    if (!t->callbacks.on_body) return size * n;
    t->guarded([&] {
      if (auto refused = t->callbacks.on_body(std::string_view(data, size * n))) t->failure = std::move(refused);
    });
    return t->failure ? 0 : size * n;
  }

  void touch() {
    last_byte = steady::now();
    got_byte = true;
  }
};

struct http_client::impl {
  impl() {
    static curl_global once;
    multi = curl_multi_init();
    io = std::thread([this] { run(); });
  }

  ~impl() {
    stopping = true;
    curl_multi_wakeup(multi);
    io.join();
    for (auto& [id, t] : transfers) {
      {
        std::lock_guard lock(t->gate);
        t->cancelled = true;
      }
      curl_multi_remove_handle(multi, t->easy);
    }
    transfers.clear();
    curl_multi_cleanup(multi);
  }

  std::uint64_t start(http_request request, http_callbacks callbacks) {
    auto t = std::make_shared<transfer>();
    t->id = next_id++;
    t->request = std::move(request);
    t->callbacks = std::move(callbacks);
    {
      std::lock_guard lock(mutex);
      pending_starts.push_back(t);
      by_id[t->id] = t;
    }
    curl_multi_wakeup(multi);
    return t->id;
  }

  void cancel(std::uint64_t id) {
    std::shared_ptr<transfer> t;
    {
      std::lock_guard lock(mutex);
      auto it = by_id.find(id);
      if (it == by_id.end()) return;
      t = it->second;
      pending_cancels.push_back(id);
    }
    {
      std::lock_guard lock(t->gate);  // waits for a running callback
      t->cancelled = true;
    }
    curl_multi_wakeup(multi);
  }

  void run() {
    while (!stopping) {
      take_commands();
      int running = 0;
      curl_multi_perform(multi, &running);
      finish_done();
      check_timeouts();
      curl_multi_poll(multi, nullptr, 0, 50, nullptr);
    }
  }

  void take_commands() {
    std::vector<std::shared_ptr<transfer>> starts;
    std::vector<std::uint64_t> cancels;
    {
      std::lock_guard lock(mutex);
      starts.swap(pending_starts);
      cancels.swap(pending_cancels);
    }
    for (auto& t : starts) add(std::move(t));
    for (auto id : cancels) remove(id);
  }

  void add(std::shared_ptr<transfer> t) {
    CURL* e = curl_easy_init();
    t->easy = e;
    const http_request& r = t->request;
    curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    if (r.method == "POST" || !r.body.empty()) {
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.data());
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    }
    for (const auto& [k, v] : r.headers) t->header_list = curl_slist_append(t->header_list, (k + ": " + v).c_str());
    // A large body would otherwise wait for a "100 Continue" first.
    t->header_list = curl_slist_append(t->header_list, "Expect:");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->header_list);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout.count()));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.total_timeout.count()));
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &transfer::on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &transfer::on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
    t->started = steady::now();
    curl_multi_add_handle(multi, e);
    transfers[t->id] = std::move(t);
  }

  void remove(std::uint64_t id) {
    auto it = transfers.find(id);
    if (it != transfers.end()) {
      curl_multi_remove_handle(multi, it->second->easy);
      transfers.erase(it);
    }
    std::lock_guard lock(mutex);
    by_id.erase(id);
  }

  void done(transfer& t, std::optional<error_info> error) {
    if (!error) t.send_head();
    // curl's own code for an aborted write says less than what the callback threw.
    if (t.failure) error = t.failure;
    std::lock_guard lock(t.gate);
    if (t.cancelled) return;
    t.cancelled = true;  // nothing after on_done
    // The last callback: if it throws, there is no one left to tell.
    if (t.callbacks.on_done) t.guarded([&] { t.callbacks.on_done(std::move(error)); });
  }

  void finish_done() {
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      transfer* t = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &t);
      const CURLcode code = m->data.result;
      std::optional<error_info> error;
      if (code == CURLE_OPERATION_TIMEDOUT)
        error =
            error_info::of(error_type::timeout, std::string("the request timed out: ") + curl_easy_strerror(code), 1);
      else if (code != CURLE_OK)
        error = error_info::of(error_type::network, curl_easy_strerror(code), 1);
      const std::uint64_t id = t->id;
      done(*t, std::move(error));
      remove(id);
    }
  }

  // curl has no first-byte or between-chunks timeout: they are checked here.
  void check_timeouts() {
    const auto now = steady::now();
    std::vector<std::uint64_t> expired;
    for (auto& [id, t] : transfers) {
      const http_request& r = t->request;
      std::optional<std::string> why;
      if (!t->got_byte && now - t->started > r.first_byte_timeout)
        why = "no response within " + std::to_string(r.first_byte_timeout.count()) + " ms";
      else if (t->got_byte && now - t->last_byte > r.idle_timeout)
        why = "the response stalled for " + std::to_string(r.idle_timeout.count()) + " ms";
      if (!why) continue;
      done(*t, error_info::of(error_type::timeout, *why, 1));
      expired.push_back(id);
    }
    for (auto id : expired) remove(id);
  }

  CURLM* multi = nullptr;
  std::thread io;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> next_id{1};
  std::mutex mutex;  // guards the three below
  std::vector<std::shared_ptr<transfer>> pending_starts;
  std::vector<std::uint64_t> pending_cancels;
  std::unordered_map<std::uint64_t, std::shared_ptr<transfer>> by_id;
  // Owned by the I/O thread.
  std::unordered_map<std::uint64_t, std::shared_ptr<transfer>> transfers;
};

http_client::http_client() : impl_(std::make_unique<impl>()) {}
http_client::~http_client() = default;

std::uint64_t http_client::start(http_request request, http_callbacks callbacks) {
  return impl_->start(std::move(request), std::move(callbacks));
}

void http_client::cancel(std::uint64_t id) { impl_->cancel(id); }

}  // namespace troupe
