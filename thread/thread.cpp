#include "thread/thread.hpp"

#include "json/json_reader.hpp"

#include <algorithm>
#include <stdexcept>

namespace troupe {

namespace json = boost::json;

std::size_t thread_stats::count(std::string_view kind) const {
  for (const auto& [k, n] : by_kind)
    if (k == kind) return n;
  return 0;
}

const json::object& thread_view::metadata() const {
  static const json::object empty;
  return metadata_ ? *metadata_ : empty;
}

thread_stats thread_view::stats() const {
  thread_stats s{size_, {}};
  for (const entry& e : entries()) {
    auto it = std::find_if(s.by_kind.begin(), s.by_kind.end(), [&](const auto& kc) { return kc.first == e.kind; });
    if (it == s.by_kind.end())
      s.by_kind.emplace_back(e.kind, 1);
    else
      ++it->second;
  }
  return s;
}

const entry* thread_view::at_seq(std::uint64_t seq) const { return seq < size_ ? &(*log_)[seq] : nullptr; }

const entry* thread_view::last() const { return size_ ? &(*log_)[size_ - 1] : nullptr; }

entry_range thread_view::entries() const { return {log_, 0, size_}; }

entry_range thread_view::slice(std::uint64_t from, std::uint64_t to) const {
  if (size_ == 0 || from > to || from >= size_) return {log_, 0, 0};
  return {log_, from, std::min<std::uint64_t>(to, size_ - 1) + 1};
}

std::vector<const entry*> thread_view::of_kind(std::string_view kind) const { return of_kinds({kind}); }

std::vector<const entry*> thread_view::of_kinds(std::initializer_list<std::string_view> kinds) const {
  std::vector<const entry*> out;
  for (const entry& e : entries())
    if (std::find(kinds.begin(), kinds.end(), e.kind) != kinds.end()) out.push_back(&e);
  return out;
}

std::vector<const entry*> thread_view::with_ref(std::string_view key, const json::value& value) const {
  std::vector<const entry*> out;
  const json::string* wanted = value.if_string();
  for (const entry& e : entries()) {
    if (wanted) {
      if (e.refs.string(key) == std::string_view(*wanted)) out.push_back(&e);
    } else if (e.refs.value(key) == value) {
      out.push_back(&e);
    }
  }
  return out;
}

std::optional<std::string> thread_view::last_assistant_text() const {
  for (std::size_t i = size_; i-- > 0;) {
    const entry& e = (*log_)[i];
    if (e.kind == entry_kind::message && string_field(e.payload, "role") == "assistant")
      return std::string(string_field(e.payload, "content").value_or(""));
  }
  return std::nullopt;
}

thread::thread(std::string id, std::int64_t created_at, json::object metadata) {
  id_ = std::move(id);
  created_at_ = updated_at_ = created_at;
  if (!metadata.empty()) metadata_ = std::make_shared<const json::object>(std::move(metadata));
}

void thread::set_metadata(json::object metadata) {
  metadata_ = std::make_shared<const json::object>(std::move(metadata));
}

void thread::push(std::span<entry> stamped) {
  if (stamped.empty()) return;
  if (!log_) log_ = std::make_shared<entry_log>();
  if (!log_->try_append(size_, stamped)) {
    // Another copy of this thread has grown the shared storage past what this
    // copy holds: continue in storage of our own.
    std::vector<entry> all;
    all.reserve(size_ + stamped.size());
    for (const entry& e : entries()) all.push_back(e);
    for (entry& e : stamped) all.push_back(std::move(e));
    auto own = std::make_shared<entry_log>();
    own->try_append(0, all);
    log_ = std::move(own);
  }
  for (std::size_t i = 0; i < stamped.size(); ++i)
    if ((*log_)[size_ + i].kind == entry_kind::summary) last_summary_ = size_ + i;
  size_ += stamped.size();
  rev_ += stamped.size();
}

entry_range thread::append(std::vector<entry_draft> drafts, std::int64_t now_ms, id_source& ids) {
  for (const auto& d : drafts)
    if (d.kind.empty()) throw std::invalid_argument("thread::append: an entry needs a kind");
  std::vector<entry> stamped;
  stamped.reserve(drafts.size());
  for (auto& d : drafts)
    stamped.push_back(entry{ids.next("entry"), size_ + stamped.size(), now_ms, std::move(d.kind), std::move(d.payload),
                            std::move(d.refs), 0});
  for (entry& e : stamped) {
    e.payload.normalize(e.kind);
    e.tokens = estimate_tokens(e.kind, e.payload);
  }
  const std::size_t first = size_;
  push(stamped);
  if (size_ != first) updated_at_ = now_ms;
  return {log_, first, size_};
}

const entry& thread::append(entry_draft draft, std::int64_t now_ms, id_source& ids) {
  if (draft.kind.empty()) throw std::invalid_argument("thread::append: an entry needs a kind");
  entry e{ids.next("entry"), size_, now_ms, std::move(draft.kind), std::move(draft.payload), std::move(draft.refs), 0};
  e.payload.normalize(e.kind);
  e.tokens = estimate_tokens(e.kind, e.payload);
  push(std::span<entry>(&e, 1));
  updated_at_ = now_ms;
  return *last();
}

decoded<thread> thread::restore(std::string id, std::uint64_t rev, std::int64_t created_at, std::int64_t updated_at,
                                json::object metadata, std::vector<entry> entries) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].seq != i)
      return decode_error{element_path("entries", i) + ".seq",
                          "expected " + std::to_string(i) + " (seq must run 0, 1, 2, … without gaps)"};
    if (entries[i].kind.empty()) return decode_error{element_path("entries", i) + ".kind", "must not be empty"};
  }
  if (rev < entries.size()) return decode_error{"rev", "is smaller than the number of entries"};
  thread t(std::move(id), created_at, std::move(metadata));
  for (entry& e : entries) {
    e.payload.normalize(e.kind);
    e.tokens = estimate_tokens(e.kind, e.payload);
  }
  t.push(entries);
  t.rev_ = rev;
  t.updated_at_ = updated_at;
  return t;
}

}  // namespace troupe
