#pragma once
// A turn's SSE event ids: where each event stands among its thread's
// entries, so that a turn streamed live and the same turn told again from
// the store (after a restart, when nothing of it is left in memory) give
// their events the same ids, and a Last-Event-ID from either resumes the
// other with nothing missed and nothing twice (docs/serving.md, "Event ids").
//
//   id = (seq + 1) * 2^26 + offset
//
// where seq is the request's newest entry when the event was sent
// (stream_event.hpp's thread_seq), and the offset places the event after it:
//   - message.delta: the bytes of thinking and then text that its model call
//     had streamed, up to and including this delta;
//   - tool.started, tool.finished: started * 2^13 + finished, the starts and
//     ends of the call's tools told so far, this one included (ends are told
//     in the order the model asked for the calls);
//   - approval_request (a call that waits for a decision): counted as a
//     start, after the starts of the batch's calls that run at once;
//   - the last event (message.completed or error): 0, at the request's last
//     entry; a paused turn's (error awaiting_input): that entry's last
//     offset, so that what its decisions add (told from the store: entries
//     from the first approval_request on are placed after their own seq)
//     comes after it.
// Entries of one thread have distinct seqs, so ids are unique in the
// conversation and grow along it; they stay below 2^53, exact in JavaScript.
// The conversation event has no id: it opens a stream of its turn read from
// before the turn's first id.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace troupe::serve {

inline constexpr unsigned offset_bits = 26;
inline constexpr std::uint64_t max_offset = (std::uint64_t{1} << offset_bits) - 1;
inline constexpr unsigned tool_bits = 13;
inline constexpr std::uint64_t max_tools = (std::uint64_t{1} << tool_bits) - 1;

// The id of an event `offset` after entry `seq` (an offset past the range
// is held at its end: ids then repeat rather than overflow into the next seq).
constexpr std::uint64_t event_id(std::uint64_t seq, std::uint64_t offset) {
  return ((seq + 1) << offset_bits) + std::min(offset, max_offset);
}

// The offset of a tool event: `started` starts and `finished` ends told.
constexpr std::uint64_t tool_offset(std::uint64_t started, std::uint64_t finished) {
  return (std::min(started, max_tools) << tool_bits) + std::min(finished, max_tools);
}

// The entry an id is placed after, and its offset there (ids below 2^26 are
// none of a turn's: seq 0, offset 0 for them).
constexpr std::uint64_t seq_of(std::uint64_t id) { return id >> offset_bits == 0 ? 0 : (id >> offset_bits) - 1; }
constexpr std::uint64_t offset_of(std::uint64_t id) { return id >> offset_bits == 0 ? 0 : id & max_offset; }

// What is left of a model call's thinking and text for a reader who saw
// `seen` bytes of them, counted thinking first (a model thinks, then
// answers); cut on a UTF-8 character's boundary.
std::pair<std::string, std::string> unseen_delta(std::string_view thinking, std::string_view text, std::uint64_t seen);

}  // namespace troupe::serve
