#include "apps/serve/turn_follower.hpp"

#include "apps/serve/turn_json.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>

namespace troupe::serve {

namespace {

struct follower : std::enable_shared_from_this<follower> {
  follower(boost::asio::thread_pool& workers, const store_handle& s, std::string conversation, turn_ids i,
           follow_options o)
      : timer(workers), store(s), conversation_id(std::move(conversation)), ids(std::move(i)), options(o) {}

  boost::asio::steady_timer timer;
  const store_handle& store;
  std::string conversation_id;
  turn_ids ids;
  follow_options options;
  std::shared_ptr<turn> t;
  bool opened = false;       // the conversation event (it has no id) went out
  std::uint64_t newest = 0;  // the id of the newest event pushed
  std::chrono::steady_clock::time_point next_ask = std::chrono::steady_clock::now() + options.ask_again_every;

  // What the store shows beyond what was pushed; true once the turn ended.
  bool take(const replayed_turn& r) {
    const std::size_t told = r.result ? r.events.size() - 1 : r.events.size();
    for (std::size_t i = 0; i < told; ++i) {
      const sse_event& e = r.events[i];
      if (e.id == 0 ? opened : e.id <= newest) continue;
      t->push(e.name, boost::json::parse(e.data), e.id);
      if (e.id == 0)
        opened = true;
      else
        newest = e.id;
    }
    if (!r.result) return false;
    t->finish(*r.result, r.events.back().name, boost::json::parse(r.events.back().data), r.events.back().id);
    return true;
  }

  void poll() {
    timer.expires_after(options.poll);
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec) return;
      if (auto r = stored_turn(self->store, self->conversation_id, self->ids))
        if (self->take(*r)) return;
      if (self->options.stopping && *self->options.stopping)
        return self->end(error_type::shutdown, "the server is stopping; reconnect to follow the turn elsewhere");
      if (std::chrono::steady_clock::now() >= self->options.give_up)
        return self->end("turn_incomplete",
                         "the turn started on another node and has not ended in its thread; "
                         "send its message again with its Idempotency-Key to continue it");
      if (self->options.ask_again && std::chrono::steady_clock::now() >= self->next_ask) {
        self->next_ask = std::chrono::steady_clock::now() + self->options.ask_again_every;
        self->options.ask_again();
      }
      self->poll();
    });
  }

  // Ends the turn, unended in its thread, with an error of the server's.
  void end(const char* type, std::string message) {
    turn_result result{reply{ids.request_id, error_info::of(type, std::move(message)), {}, 0}, std::nullopt, false};
    auto [name, data] = final_event(result);
    t->finish(std::move(result), name, data, 0);
  }
};

}  // namespace

std::shared_ptr<turn> follow_stored_turn(boost::asio::thread_pool& workers, const store_handle& store,
                                         const std::string& conversation_id, turn_ids ids, const replayed_turn& so_far,
                                         follow_options options) {
  ids.content = so_far.content;
  auto f = std::make_shared<follower>(workers, store, conversation_id, ids, options);
  f->t = std::make_shared<turn>(std::move(ids));
  if (!f->take(so_far)) f->poll();
  return f->t;
}

}  // namespace troupe::serve
