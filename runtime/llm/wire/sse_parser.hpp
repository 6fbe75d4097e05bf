#pragma once
// A Server-Sent Events parser that follows the WHATWG HTML specification's
// "event stream interpretation": lines end in CR, LF or CRLF (a CR and its LF
// may arrive in different reads); lines starting with ':' are comments;
// `data:` lines accumulate with newlines between them; `event:`, `id:` and
// `retry:` set the event type, the last event id and the reconnection time;
// a blank line dispatches the event; an event not closed by a blank line
// when the stream ends is not dispatched. Bytes are fed as they arrive, split
// anywhere (UTF-8 sequences included): the events are the same however the
// bytes are split.
//
// An event (with the line being read) may hold at most max_event_bytes: a
// server that never ends a line or an event must not take all our memory.
// Past the cap the parser stops, and overflowed() says why.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe {

struct sse_event {
  std::string type;  // "message" unless an event: field said otherwise
  std::string data;
  std::string last_event_id;
};

inline constexpr std::size_t default_max_event_bytes = 4 * 1024 * 1024;

class sse_parser {
 public:
  explicit sse_parser(std::size_t max_event_bytes = default_max_event_bytes) : max_event_bytes_(max_event_bytes) {}

  // Parses `bytes`, calling on_event(const sse_event&) for every complete
  // event. Does nothing once overflowed.
  template <class OnEvent>
  void feed(std::string_view bytes, OnEvent&& on_event) {
    for (char c : bytes) {
      if (overflowed_) return;
      if (after_cr_ && c == '\n') {  // the LF of a CRLF split across reads
        after_cr_ = false;
        continue;
      }
      after_cr_ = false;
      if (c == '\r' || c == '\n') {
        after_cr_ = c == '\r';
        line(on_event);
        continue;
      }
      if (line_.size() + data_.size() >= max_event_bytes_) {
        overflowed_ = true;
        return;
      }
      line_.push_back(c);
    }
  }

  // An event grew past max_event_bytes; nothing more is parsed.
  bool overflowed() const { return overflowed_; }
  std::size_t max_event_bytes() const { return max_event_bytes_; }

  // The reconnection time a retry: field asked for, in milliseconds.
  std::optional<std::int64_t> retry_ms() const { return retry_ms_; }
  // Bytes of an unfinished line or event are still held (the stream ended
  // mid-event if true when the connection closes).
  bool mid_event() const { return !line_.empty() || has_data_ || !type_.empty(); }

 private:
  template <class OnEvent>
  void line(OnEvent& on_event) {
    if (first_line_) {
      first_line_ = false;
      // A UTF-8 byte order mark before the first field is ignored.
      if (line_.rfind("\xEF\xBB\xBF", 0) == 0) line_.erase(0, 3);
    }
    if (line_.empty()) {
      if (has_data_) {
        if (!data_.empty() && data_.back() == '\n') data_.pop_back();
        sse_event e{type_.empty() ? std::string("message") : std::move(type_), std::move(data_), last_id_};
        type_.clear();
        data_.clear();
        has_data_ = false;
        on_event(static_cast<const sse_event&>(e));
      } else {
        type_.clear();
      }
      return;
    }
    field(line_);
    line_.clear();
  }

  void field(std::string_view l);

  std::string line_;
  std::string data_;
  std::string type_;
  std::string last_id_;
  bool has_data_ = false;
  bool after_cr_ = false;
  bool first_line_ = true;
  std::optional<std::int64_t> retry_ms_;
  std::size_t max_event_bytes_;
  bool overflowed_ = false;
};

}  // namespace troupe
