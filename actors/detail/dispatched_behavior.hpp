#pragma once
// A typed actor whose messages reach their handlers through CAF's default
// handler instead of through its behaviour: for actors spawned by the
// hundred thousand, where every byte of each one counts.
//
// Why: a behaviour's handlers find their actor only through a capture, so
// every actor's behaviour is an allocation of its own (an agent's ten
// handlers made 448 bytes, a tenth of an agent). The default handler is the
// one place CAF hands a handler its actor. An actor built this way returns
// `dispatched_behavior`, one behaviour object shared by every actor of its
// interface, which handles nothing it is sent; its default handler hands
// each message to a plain function of the actor with `handle_as`, which
// checks, as a typed behaviour checks its handlers, that the function takes
// and answers a message of the interface. What a typed behaviour checks and
// this cannot: that every message of the interface has a handler, so the
// actor's dispatch asserts the interface's size beside its switch.

#include <caf/all.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace troupe::detail {

// A handler's outcome as the default handler returns it.
template <class T>
caf::result<caf::message> as_message(caf::result<T> r) {
  switch (r.flag) {
    case caf::rt_value:
      return std::move(r.value);
    case caf::rt_error:
      return std::move(r.err);
    case caf::rt_delegated:
      return caf::delegated<caf::message>();
    default:
      return caf::skip;
  }
}

template <class T>
struct answer_of {
  using type = T;
};
template <class T>
struct answer_of<caf::result<T>> {
  using type = T;
};

template <class In, class Out, class Signatures>
struct declares;
template <class In, class Out, class... Signatures>
struct declares<In, Out, caf::detail::type_list<Signatures...>>
    : std::bool_constant<(std::is_same_v<Signatures, caf::typed_mpi<In, Out>> || ...)> {};

// Calls `handle` with the elements after the atom if the message holds
// exactly (Atom, Args...), and drops it otherwise. What `handle` takes and
// answers must be a message of the interface of `Handle` (a caf::typed_actor).
template <class Handle, class Atom, class Self, class... Args, class Answer>
caf::result<caf::message> handle_as(Answer (*handle)(Self, Args&...), Self self, caf::message_view& view) {
  static_assert(declares<caf::detail::type_list<Atom, Args...>, caf::output_tuple<typename answer_of<Answer>::type>,
                         typename Handle::signatures>::value,
                "not a message of the actor's interface, or answered with another type");
  caf::type_erased_tuple& xs = view.content();
  if (!xs.match_elements<Atom, Args...>()) return caf::print_and_drop(self, view);
  return [&]<std::size_t... I>(std::index_sequence<I...>)->caf::result<caf::message> {
    if constexpr (std::is_void_v<Answer>) {
      handle(self, xs.get_mutable_as<Args>(I + 1)...);
      return caf::message();
    } else if constexpr (std::is_same_v<Answer, typename answer_of<Answer>::type>) {
      return caf::make_message(handle(self, xs.get_mutable_as<Args>(I + 1)...));
    } else {
      return as_message(handle(self, xs.get_mutable_as<Args>(I + 1)...));
    }
  }
  (std::index_sequence_for<Args...>{});
}

// A type no message is made of: a behaviour needs a handler to keep its
// actor alive, and this one is the same object for every actor.
struct never_sent {};

// The behaviour an actor of `Handle`'s interface returns when `dispatch`,
// installed here as its default handler, handles every message it is sent.
template <class Handle>
typename Handle::behavior_type dispatched_behavior(caf::scheduled_actor* self,
                                                   caf::result<caf::message> (*dispatch)(caf::scheduled_actor*,
                                                                                         caf::message_view&)) {
  self->set_default_handler(dispatch);
  static const caf::behavior shared{[](never_sent) {}};
  return {typename Handle::behavior_type::unsafe_init{}, shared};
}

}  // namespace troupe::detail
