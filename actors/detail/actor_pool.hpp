#pragma once
// A fixed number of interchangeable actors (model executors, tool executors,
// brokers), picked by key. The pool supervises its members: one that
// terminates is replaced in its slot at once, so pick() hands out a live
// actor. A request that still reached a dead one (it bounces with
// request_receiver_down) reports it with replace(), which replaces it then
// if its own termination has not done so yet.

#include <caf/all.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace troupe {

template <class Handle>
class actor_pool {
 public:
  using factory = std::function<Handle()>;
  // Called after a member was replaced (for telemetry).
  using on_replaced = std::function<void()>;

  actor_pool() : shared_(std::make_shared<shared>()) {}

  void start(std::size_t size, factory make, on_replaced replaced = {}) {
    std::lock_guard lock(shared_->mutex);
    shared_->make = std::move(make);
    shared_->replaced = std::move(replaced);
    for (std::size_t i = 0; i < size; ++i) shared_->slots.push_back(spawn_member(shared_));
  }

  Handle pick(std::size_t key) const {
    std::lock_guard lock(shared_->mutex);
    return shared_->slots.empty() ? Handle{} : shared_->slots[key % shared_->slots.size()];
  }

  // `dead` is known to have terminated: make sure its slot holds a live one.
  void replace(const Handle& dead) const { replace_in(shared_, dead.address()); }

  // Stops replacing members and returns them, for shutdown.
  std::vector<Handle> close() {
    std::lock_guard lock(shared_->mutex);
    shared_->closed = true;
    return shared_->slots;
  }

  std::vector<Handle> all() const {
    std::lock_guard lock(shared_->mutex);
    return shared_->slots;
  }

 private:
  // Held by every member's termination hook too, so it outlives them all.
  struct shared {
    std::mutex mutex;
    factory make;
    on_replaced replaced;
    std::vector<Handle> slots;
    bool closed = false;
  };

  // With the mutex held.
  static Handle spawn_member(const std::shared_ptr<shared>& s) {
    Handle h = s->make();
    std::weak_ptr<shared> weak = s;
    caf::actor_cast<caf::abstract_actor*>(h)->attach_functor([weak, addr = h.address()] {
      if (auto s = weak.lock()) replace_in(s, addr);
    });
    return h;
  }

  static void replace_in(const std::shared_ptr<shared>& s, const caf::actor_addr& dead) {
    on_replaced replaced;
    {
      std::lock_guard lock(s->mutex);
      if (s->closed) return;
      for (std::size_t i = 0; i < s->slots.size(); ++i) {
        if (s->slots[i].address() != dead) continue;
        s->slots[i] = spawn_member(s);
        replaced = s->replaced;
        break;
      }
    }
    if (replaced) replaced();
  }

  std::shared_ptr<shared> shared_;
};

}  // namespace troupe
