#include "strategy/recorded_request.hpp"

#include "signals/error_info.hpp"

#include <string>

namespace troupe {

const entry* newest_entry_of_request(const thread_view& t, std::string_view request_id) {
  for (std::uint64_t seq = t.size(); seq-- > 0;)
    if (const entry* e = t.at_seq(seq); e && e->refs.request_id() == request_id) return e;
  return nullptr;
}

std::optional<reply> recorded_end(const entry& newest, std::string_view request_id) {
  if (newest.kind == entry_kind::error) {
    if (auto e = decode_error_info(newest.payload.to_json(), "payload"))
      return reply{std::string(request_id), std::move(*e), {}, 0};
    // Written by hand, or by a version that wrote errors otherwise: what it names.
    return reply{std::string(request_id),
                 error_info::of(std::string(newest.payload.string("type").value_or(error_type::agent_failed)),
                                std::string(newest.payload.string("message").value_or(""))),
                 {},
                 0};
  }
  if (newest.kind == entry_kind::message && newest.payload.string("role") == "assistant")
    return reply{std::string(request_id), std::string(newest.payload.string("content").value_or("")), {}, 0};
  return std::nullopt;
}

}  // namespace troupe
