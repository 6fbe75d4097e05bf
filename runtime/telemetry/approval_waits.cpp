#include "runtime/telemetry/detail/approval_waits.hpp"

namespace troupe {

std::vector<telemetry_event> approval_waits(const thread_view& t, std::uint64_t from, std::string_view agent_id) {
  std::vector<telemetry_event> out;
  for (std::uint64_t seq = from; seq < t.size(); ++seq) {
    const entry* d = t.at_seq(seq);
    if (!d || d->kind != entry_kind::decision) continue;
    const auto request_id = string_field(d->refs, "request_id");
    const auto tool_call_id = string_field(d->refs, "tool_call_id");
    const entry* asked = nullptr;
    for (const entry* a : t.of_kind(entry_kind::approval_request))
      if (string_field(a->refs, "request_id") == request_id && string_field(a->refs, "tool_call_id") == tool_call_id)
        asked = a;
    if (!asked) continue;
    telemetry_event e{telemetry_kind::approval_decided,
                      std::string(agent_id),
                      t.id(),
                      std::string(request_id.value_or("")),
                      std::string(string_field(d->refs, "call_id").value_or("")),
                      std::string(tool_call_id.value_or("")),
                      0,
                      (d->at - asked->at) * 1000,
                      std::string(string_field(asked->payload, "tool").value_or(""))};
    e.end_unix_ns = d->at * 1'000'000;
    e.verdict = std::string(string_field(d->payload, "verdict").value_or(""));
    e.decided_by = std::string(string_field(d->payload, "decided_by").value_or(""));
    e.expired = d->payload.to_json().contains("expired");
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace troupe
