#pragma once
// A turn told again from its thread, for a turn the server no longer holds
// in memory (it restarted, or the turn is long over): a retried POST with
// its Idempotency-Key and a reconnect after the turn both get the events
// and the result the thread records, under the ids they had live
// (event_position.hpp). The model's streamed deltas are not kept, so each
// assistant message comes as one message.delta; usage is not kept either,
// so it is null.

#include "apps/serve/turn.hpp"

#include "runtime/store/open_store.hpp"
#include "thread/thread.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe::serve {

struct replayed_turn {
  std::vector<sse_event> events;      // the conversation event first, the last one the result
  std::optional<turn_result> result;  // nullopt: the turn has not ended in the thread
  std::string content;                // the user's message that started it
  std::string request_id;             // the request it is of
};

// Whether a turn ended because the server stopped under it (shutdown): its
// client was told to retry, and nothing answered it.
bool cut_by_shutdown(const turn_result& r);

// The turn of `ids.request_id` told from its entries: those of the request,
// in seq order, as thread_store::request_entries reads them (nothing before
// its first entry is needed). nullopt if there are none.
std::optional<replayed_turn> replay_turn(const std::vector<entry>& entries, turn_ids ids);

// The turn of `request_id` in the thread's store (empty: the conversation's
// last turn, found by its question among the conversation's last messages),
// read by the request's index, never the whole thread; nullopt when the
// store has no such turn or cannot be read.
std::optional<replayed_turn> stored_turn(const store_handle& store, const std::string& conversation_id, turn_ids ids);

// The request whose turn sent event `event` (an id of event_position.hpp):
// the one whose question is the conversation's last at or before the entry
// the id is placed after. nullopt for an id of no turn.
std::optional<std::string> request_of_event(const store_handle& store, const std::string& conversation_id,
                                            std::uint64_t event);

// An ended replayed turn (its result set) as a finished turn holding its
// events, to be answered like one still in memory.
std::shared_ptr<turn> finished_turn(const replayed_turn& r, turn_ids ids);

}  // namespace troupe::serve
