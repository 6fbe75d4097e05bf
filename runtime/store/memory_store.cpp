#include "runtime/store/memory_store.hpp"

#include "runtime/clock.hpp"
#include "thread/entry_codec.hpp"

#include <algorithm>
#include <functional>

namespace troupe {

namespace {

store_error conflict(const thread_view& t, std::uint64_t stored_rev, std::uint64_t expected_rev) {
  return store_error{"conflict", "thread " + t.id() + " is at rev " + std::to_string(stored_rev) + ", not " +
                                     std::to_string(expected_rev)};
}

}  // namespace

memory_store::shard& memory_store::shard_of(const std::string& thread_id) {
  return shards_[std::hash<std::string>{}(thread_id) % shards_.size()];
}

stored<thread> memory_store::expand(const stored_compact& c) const {
  auto entries = entry_codec::read_all(c.bytes, c.size);
  if (!entries) return store_error{"corrupt", "thread " + c.id + ": " + entries.error().describe()};
  auto t = thread::restore(c.id, c.rev, c.created_at, c.updated_at, c.metadata ? *c.metadata : boost::json::object(),
                           std::move(*entries));
  if (!t) return store_error{"corrupt", "thread " + c.id + ": " + t.error().describe()};
  return std::move(*t);
}

void memory_store::write_new_entries(const stored_compact& c, const thread_view& t) {
  if (t.size() < c.size) {  // not an extension: written again whole
    std::string().swap(c.bytes);
    c.size = 0;
  }
  // The new entries are encoded apart, then the bytes grow once to their
  // exact size: held until the thread's next commit, maybe for the whole
  // run, they keep no room to grow into, and appending to them directly
  // would copy them twice (growing, then shrinking back).
  thread_local std::string added;
  added.clear();
  for (std::uint64_t i = c.size; i < t.size(); ++i)
    entry_codec::write(added, *t.at_seq(i), i ? t.at_seq(i - 1) : nullptr);
  if (!added.empty()) {
    std::string grown;
    grown.reserve(c.bytes.size() + added.size());
    grown.append(c.bytes).append(added);
    c.bytes = std::move(grown);
  }
  // A scratch buffer that once took a long thread gives its memory back.
  if (added.capacity() > 64 * 1024) std::string().swap(added);
  c.size = t.size();
  c.rev = t.rev();
  c.created_at = t.created_at();
  c.updated_at = t.updated_at();
  if (t.metadata().empty())
    c.metadata.reset();
  else if (!c.metadata || *c.metadata != t.metadata())
    c.metadata = std::make_shared<const boost::json::object>(t.metadata());
}

stored<thread> memory_store::load(const std::string& thread_id) {
  shard& s = shard_of(thread_id);
  std::lock_guard lock(s.mutex);
  if (form_ == memory_form::compact) {
    auto it = s.compact.find(thread_id);
    if (it == s.compact.end()) return store_error{"not_found", "no thread " + thread_id};
    return expand(*it);
  }
  auto it = s.threads.find(thread_id);
  if (it == s.threads.end()) return store_error{"not_found", "no thread " + thread_id};
  return thread(it->view);
}

stored<std::vector<entry>> memory_store::request_entries(const std::string& thread_id, const std::string& request_id) {
  std::optional<thread_view> view;
  if (form_ == memory_form::compact) {
    auto t = load(thread_id);
    if (t) view = *t;
  } else {
    shard& s = shard_of(thread_id);
    std::lock_guard lock(s.mutex);
    if (auto it = s.threads.find(thread_id); it != s.threads.end()) view = it->view;
  }
  std::vector<entry> out;
  if (!view) return out;
  // Scanned outside the shard's lock: the view is a snapshot of its own.
  for (const entry* e : view->with_ref("request_id", boost::json::value(request_id))) out.push_back(*e);
  return out;
}

stored<std::uint64_t> memory_store::append_fenced(const thread_view& t, std::uint64_t expected_rev,
                                                  const thread_lease& fence) {
  std::lock_guard lock(leases_mutex_);
  auto it = leases_.find(t.id());
  const std::optional<thread_lease> current =
      it == leases_.end() ? std::nullopt : std::optional<thread_lease>(it->second);
  if (auto refused = fence_refusal(current, t.id(), fence)) return *refused;
  auto written = append(t, expected_rev);
  if (written) it->second = lease_renewed(it->second, fence);
  return written;
}

stored<thread_lease> memory_store::acquire_lease(const std::string& thread_id, const std::string& owner,
                                                 std::int64_t now_ms, std::chrono::milliseconds ttl) {
  std::lock_guard lock(leases_mutex_);
  auto it = leases_.find(thread_id);
  auto taken = lease_taken(it == leases_.end() ? std::nullopt : std::optional<thread_lease>(it->second), thread_id,
                           owner, now_ms, ttl);
  if (taken) leases_[thread_id] = *taken;
  return taken;
}

void memory_store::release_lease(const std::string& thread_id, const thread_lease& held) {
  std::lock_guard lock(leases_mutex_);
  if (auto it = leases_.find(thread_id); it != leases_.end()) it->second = lease_released(it->second, held);
}

stored<std::uint64_t> memory_store::append(const thread_view& t, std::uint64_t expected_rev) {
  std::size_t stored_size = 0;
  {
    shard& s = shard_of(t.id());
    std::lock_guard lock(s.mutex);
    if (form_ == memory_form::compact) {
      auto c = s.compact.find(t.id());
      const std::uint64_t stored_rev = c == s.compact.end() ? 0 : c->rev;
      if (stored_rev != expected_rev) return conflict(t, stored_rev, expected_rev);
      if (c == s.compact.end()) c = s.compact.insert(stored_compact{t.id(), 0, 0, 0, 0, nullptr, {}}).first;
      stored_size = c->size;
      write_new_entries(*c, t);
    } else {
      auto it = s.threads.find(t.id());
      const std::uint64_t stored_rev = it == s.threads.end() ? 0 : it->view.rev();
      if (stored_rev != expected_rev) return conflict(t, stored_rev, expected_rev);
      if (it == s.threads.end()) {
        s.threads.insert(stored_view{t});
      } else {
        stored_size = it->view.size();
        it->view = t;
      }
    }
  }
  // Most threads belong to no conversation: their commits stop here.
  if (!has_conversations_.load(std::memory_order_acquire)) return t.rev();
  std::lock_guard lock(conversations_mutex_);
  auto owner = conversation_of_thread_.find(t.id());
  if (owner == conversation_of_thread_.end()) return t.rev();
  const conversation_touch touch = touch_from(t.slice(std::min(stored_size, t.size()), t.size()));
  conversation& c = conversations_.at(owner->second);
  if (touch.last_message_at) c.last_message_at = std::max(c.last_message_at, *touch.last_message_at);
  if (touch.title && c.title.empty()) c.title = *touch.title;
  return t.rev();
}

bool memory_store::erase_thread(const std::string& thread_id) {
  shard& s = shard_of(thread_id);
  std::lock_guard lock(s.mutex);
  if (auto it = s.threads.find(thread_id); it != s.threads.end()) {
    s.threads.erase(it);
    return true;
  }
  if (auto it = s.compact.find(thread_id); it != s.compact.end()) {
    s.compact.erase(it);
    return true;
  }
  return false;
}

std::vector<std::string> memory_store::list() {
  std::vector<std::string> out;
  for (shard& s : shards_) {
    std::lock_guard lock(s.mutex);
    for (const stored_view& stored : s.threads) out.push_back(stored.view.id());
    for (const stored_compact& stored : s.compact) out.push_back(stored.id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool memory_store::remove(const std::string& thread_id) {
  {
    std::lock_guard lock(conversations_mutex_);
    auto owner = conversation_of_thread_.find(thread_id);
    if (owner != conversation_of_thread_.end()) {
      conversations_.erase(owner->second);
      conversation_of_thread_.erase(owner);
    }
  }
  return erase_thread(thread_id);
}

stored<conversation> memory_store::get_or_create_conversation(const conversation_key& key) {
  std::lock_guard lock(conversations_mutex_);
  for (const auto& [id, c] : conversations_)
    if (!c.archived && c.user_id == key.user_id && c.platform == key.platform &&
        c.platform_identifier == key.platform_identifier)
      return c;
  conversation c;
  c.id = ids_.next("conv");
  c.user_id = key.user_id;
  c.platform = key.platform;
  c.platform_identifier = key.platform_identifier;
  c.thread_id = ids_.next("thread");
  c.created_at = c.updated_at = wall_clock_ms();
  conversation_of_thread_[c.thread_id] = c.id;
  opened_order_[c.id] = opened_++;
  conversations_[c.id] = c;
  has_conversations_.store(true, std::memory_order_release);
  return c;
}

stored<conversation> memory_store::find_conversation(const std::string& conversation_id) {
  std::lock_guard lock(conversations_mutex_);
  auto it = conversations_.find(conversation_id);
  if (it == conversations_.end()) return conversation_not_found(conversation_id);
  return it->second;
}

stored<std::vector<entry>> memory_store::history(const std::string& conversation_id, std::size_t limit) {
  auto c = find_conversation(conversation_id);
  if (!c) return c.error();
  std::vector<entry> out;
  auto t = load(c->thread_id);
  if (!t) return out;  // no message yet
  const auto messages = t->of_kind(entry_kind::message);
  const std::size_t first = messages.size() > limit ? messages.size() - limit : 0;
  for (std::size_t i = first; i < messages.size(); ++i) out.push_back(*messages[i]);
  return out;
}

stored<conversation_trace> memory_store::trace(const std::string& conversation_id) {
  return trace_of(find_conversation(conversation_id), *this);
}

stored<std::vector<conversation>> memory_store::list_conversations(const std::string& user_id, std::size_t limit,
                                                                   std::size_t offset) {
  std::vector<std::pair<conversation, std::uint64_t>> listed;  // with the order it was opened in
  {
    std::lock_guard lock(conversations_mutex_);
    for (const auto& [id, c] : conversations_)
      if (c.user_id == user_id && !c.archived) listed.emplace_back(c, opened_order_.at(id));
  }
  std::sort(listed.begin(), listed.end(), [](const auto& a, const auto& b) {
    if (a.first.last_message_at != b.first.last_message_at) return a.first.last_message_at > b.first.last_message_at;
    if (a.first.created_at != b.first.created_at) return a.first.created_at > b.first.created_at;
    return a.second > b.second;
  });
  std::vector<conversation> out;
  out.reserve(listed.size());
  for (auto& [c, _] : listed) out.push_back(std::move(c));
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(std::min(offset, out.size())));
  if (out.size() > limit) out.resize(limit);
  return out;
}

stored<conversation> memory_store::archive_conversation(const std::string& conversation_id) {
  std::lock_guard lock(conversations_mutex_);
  auto it = conversations_.find(conversation_id);
  if (it == conversations_.end()) return conversation_not_found(conversation_id);
  it->second.archived = true;
  it->second.updated_at = wall_clock_ms();
  return it->second;
}

stored<conversation> memory_store::set_conversation_metadata(const std::string& conversation_id,
                                                             const boost::json::object& metadata) {
  std::lock_guard lock(conversations_mutex_);
  auto it = conversations_.find(conversation_id);
  if (it == conversations_.end()) return conversation_not_found(conversation_id);
  it->second.metadata = metadata;
  it->second.updated_at = wall_clock_ms();
  return it->second;
}

stored<conversation> memory_store::claim_conversation_metadata(const std::string& conversation_id,
                                                               const std::string& key,
                                                               const boost::json::value& value) {
  std::lock_guard lock(conversations_mutex_);
  auto it = conversations_.find(conversation_id);
  if (it == conversations_.end()) return conversation_not_found(conversation_id);
  if (it->second.metadata.contains(key)) return it->second;
  it->second.metadata[key] = value;
  it->second.updated_at = wall_clock_ms();
  return it->second;
}

stored<void> memory_store::delete_conversation(const std::string& conversation_id) {
  std::string thread_id;
  {
    std::lock_guard lock(conversations_mutex_);
    auto it = conversations_.find(conversation_id);
    if (it == conversations_.end()) return conversation_not_found(conversation_id);
    thread_id = it->second.thread_id;
    conversation_of_thread_.erase(thread_id);
    opened_order_.erase(conversation_id);
    conversations_.erase(it);
  }
  erase_thread(thread_id);
  return {};
}

}  // namespace troupe
