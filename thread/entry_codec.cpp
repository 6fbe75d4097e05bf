#include "thread/entry_codec.hpp"

#include "json/json_reader.hpp"
#include "json/json_text.hpp"

#include <boost/json/parse.hpp>

#include <array>
#include <optional>
#include <stdexcept>

namespace troupe {

namespace json = boost::json;

namespace {

// Which of the payload's forms follows (its variant's index), and whether
// the entry's kind is the one that form is written for (then it is not
// written).
constexpr std::uint8_t kind_implied = 0x80;

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) { return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1); }

void put_text(std::string& out, std::string_view s) {
  put_varint(out, s.size());
  out.append(s);
}

// A correlation id: 0 when it repeats the one before, else its length + 1.
void put_repeatable(std::string& out, std::string_view s, std::string_view before) {
  if (s == before) {
    out.push_back(0);
    return;
  }
  put_varint(out, s.size() + 1);
  out.append(s);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "entry_" or "call_" and 16 lowercase hex digits (random_ids' shape) as a
// tag and 8 bytes; anything else as a tag and its text.
constexpr std::array<std::string_view, 2> id_prefixes = {"entry_", "call_"};

void put_id(std::string& out, std::string_view id) {
  for (std::size_t p = 0; p < id_prefixes.size(); ++p) {
    const std::string_view prefix = id_prefixes[p];
    if (id.size() != prefix.size() + 16 || id.substr(0, prefix.size()) != prefix) continue;
    std::uint64_t bits = 0;
    bool hex = true;
    for (const char c : id.substr(prefix.size())) {
      const int d = hex_digit(c);
      if (d < 0) {
        hex = false;
        break;
      }
      bits = bits << 4 | static_cast<std::uint64_t>(d);
    }
    if (!hex) break;
    out.push_back(static_cast<char>(p + 1));
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(bits >> (8 * i)));
    return;
  }
  out.push_back(0);
  put_text(out, id);
}

void put_extras(std::string& out, const json_extras& x) {
  put_text(out, x.empty() ? std::string() : json_text(*x.get()));
}

// Reads what the writer above wrote; any read past the end or of a
// malformed field throws, and read_all turns that into the entry's error.
class reader {
 public:
  explicit reader(std::string_view in) : in_(in) {}
  bool done() const { return at_ == in_.size(); }

  std::uint8_t byte() {
    if (at_ >= in_.size()) throw std::out_of_range("ends early");
    return static_cast<std::uint8_t>(in_[at_++]);
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const std::uint8_t b = byte();
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw std::out_of_range("a number runs past 64 bits");
  }
  std::string_view bytes(std::uint64_t n) {
    if (n > in_.size() - at_) throw std::out_of_range("ends early");
    const std::string_view s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  std::string_view text() { return bytes(varint()); }
  std::string_view repeatable(std::string_view before) {
    const std::uint64_t n = varint();
    return n == 0 ? before : bytes(n - 1);
  }
  std::string id() {
    const std::uint8_t tag = byte();
    if (tag == 0) return std::string(text());
    if (tag > id_prefixes.size()) throw std::out_of_range("an id of an unknown shape");
    std::uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= static_cast<std::uint64_t>(byte()) << (8 * i);
    std::string out(id_prefixes[tag - 1]);
    for (int i = 15; i >= 0; --i) out.push_back("0123456789abcdef"[(bits >> (4 * i)) & 0xf]);
    return out;
  }
  json::object object() { return parse_object(text()); }
  // Extras repeat across threads (a round's observations share one origin),
  // and each thread read back holds a few: the last ones this OS thread read
  // are handed out again, shared (they never change), instead of being
  // parsed again.
  json_extras extras() {
    const std::string_view t = text();
    if (t.empty()) return json_extras();
    struct recent {
      std::string text;
      json_extras extras;
    };
    thread_local std::array<recent, 8> seen;
    thread_local std::size_t next = 0;
    for (const recent& r : seen)
      if (!r.extras.empty() && r.text == t) return r.extras;
    recent& r = seen[next++ % seen.size()];
    r.extras = json_extras(parse_object(t));
    r.text.assign(t);
    return r.extras;
  }

 private:
  static json::object parse_object(std::string_view t) {
    json::value v = json::parse(t);
    if (!v.is_object()) throw std::out_of_range("a member that is not a JSON object");
    return std::move(v.get_object());
  }
  std::string_view in_;
  std::size_t at_ = 0;
};

}  // namespace

void entry_codec::write(std::string& out, const entry& e, const entry* previous) {
  const std::size_t form = e.payload.get().index();
  const bool implied = form != 0 && e.kind == kind_of(e.payload);
  out.push_back(static_cast<char>(form | (implied ? kind_implied : 0)));
  if (!implied) put_text(out, e.kind);
  put_id(out, e.id);
  put_varint(out, zigzag(e.at - (previous ? previous->at : 0)));
  std::visit(
      [&](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, json_payload>) {
          put_text(out, json_text(p.fields));
        } else if constexpr (std::is_same_v<T, message_payload>) {
          put_text(out, p.role);
          put_text(out, p.content);
          put_text(out, p.thinking);
          put_text(out, p.finish_reason);
          put_extras(out, p.extra);
        } else if constexpr (std::is_same_v<T, tool_call_payload>) {
          put_text(out, p.name);
          put_text(out, p.arguments_text);
          put_extras(out, p.extra);
        } else if constexpr (std::is_same_v<T, tool_result_payload>) {
          put_text(out, p.name);
          put_text(out, p.outcome);
          out.push_back(static_cast<char>(p.shape));
          put_extras(out, p.extra);
        } else if constexpr (std::is_same_v<T, summary_payload>) {
          put_varint(out, zigzag(p.from_seq));
          put_varint(out, zigzag(p.to_seq));
          put_text(out, p.content);
          put_text(out, p.model);
          put_extras(out, p.extra);
        } else {
          static_assert(std::is_same_v<T, error_payload>);
          put_text(out, p.type);
          put_text(out, p.message);
          put_extras(out, p.extra);
        }
      },
      e.payload.get());
  const entry_refs& r = e.refs;
  const entry_refs* before = previous ? &previous->refs : nullptr;
  out.push_back(static_cast<char>(r.order_));
  out.push_back(static_cast<char>(r.count_));
  put_varint(out, zigzag(r.iteration_));
  put_repeatable(out, r.request_id_, before ? before->request_id_.view() : std::string_view());
  put_repeatable(out, r.call_id_, before ? before->call_id_.view() : std::string_view());
  put_repeatable(out, r.tool_call_id_, before ? before->tool_call_id_.view() : std::string_view());
  put_extras(out, r.extras_);
}

decoded<std::vector<entry>> entry_codec::read_all(std::string_view bytes, std::size_t expected) {
  std::vector<entry> out;
  out.reserve(expected);
  reader in(bytes);
  while (!in.done()) {
    const entry* previous = out.empty() ? nullptr : &out.back();
    try {
      entry e;
      e.seq = out.size();
      const std::uint8_t head = in.byte();
      const std::size_t form = head & ~kind_implied;
      if (form >= std::variant_size_v<entry_payload::variant>) throw std::out_of_range("a payload of an unknown form");
      std::optional<std::string> kind;
      if (!(head & kind_implied)) kind = std::string(in.text());
      e.id = in.id();
      e.at = (previous ? previous->at : 0) + unzigzag(in.varint());
      switch (form) {
        case 0:
          e.payload = entry_payload(in.object());
          break;
        case 1: {
          message_payload p;
          p.role = in.text();
          p.content = in.text();
          p.thinking = in.text();
          p.finish_reason = in.text();
          p.extra = in.extras();
          e.payload = std::move(p);
          break;
        }
        case 2: {
          tool_call_payload p;
          p.name = in.text();
          p.arguments_text = in.text();
          p.extra = in.extras();
          e.payload = std::move(p);
          break;
        }
        case 3: {
          tool_result_payload p;
          p.name = in.text();
          p.outcome = in.text();
          const std::uint8_t shape = in.byte();
          if (shape > static_cast<std::uint8_t>(tool_result_payload::form::error_json))
            throw std::out_of_range("a tool result of an unknown shape");
          p.shape = static_cast<tool_result_payload::form>(shape);
          p.extra = in.extras();
          e.payload = std::move(p);
          break;
        }
        case 4: {
          summary_payload p;
          p.from_seq = unzigzag(in.varint());
          p.to_seq = unzigzag(in.varint());
          p.content = in.text();
          p.model = in.text();
          p.extra = in.extras();
          e.payload = std::move(p);
          break;
        }
        default: {
          error_payload p;
          p.type = in.text();
          p.message = in.text();
          p.extra = in.extras();
          e.payload = std::move(p);
          break;
        }
      }
      e.kind = kind ? std::string_view(*kind) : kind_of(e.payload);
      entry_refs& r = e.refs;
      const entry_refs* before = previous ? &previous->refs : nullptr;
      r.order_ = in.byte();
      r.count_ = in.byte();
      if (r.count_ > 4) throw std::out_of_range("refs with more than four known ids");
      const std::int64_t iteration = unzigzag(in.varint());
      if (!std::in_range<std::int32_t>(iteration)) throw std::out_of_range("an iteration past 32 bits");
      r.iteration_ = static_cast<std::int32_t>(iteration);
      r.request_id_ = in.repeatable(before ? before->request_id_.view() : std::string_view());
      r.call_id_ = in.repeatable(before ? before->call_id_.view() : std::string_view());
      r.tool_call_id_ = in.repeatable(before ? before->tool_call_id_.view() : std::string_view());
      r.extras_ = in.extras();
      out.push_back(std::move(e));
    } catch (const std::exception& ex) {
      return decode_error{element_path("entries", out.size()), std::string("unreadable compact form: ") + ex.what()};
    }
  }
  return out;
}

}  // namespace troupe
