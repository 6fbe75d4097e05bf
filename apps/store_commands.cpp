// troupe threads … and troupe conversations …: what is stored, read and
// managed without running an agent.

#include "apps/commands.hpp"
#include "apps/thread_output.hpp"
#include "json/json_text.hpp"
#include "runtime/clock.hpp"
#include "runtime/random_ids.hpp"

#include <boost/json.hpp>

#include <iostream>

namespace troupe::cli {

namespace json = boost::json;

namespace {

CLI::App* with_common(CLI::App* c, store_command_options& o) {
  add_store_option(*c, o.store);
  c->add_flag("--json", o.json, "Print JSON instead of text");
  c->callback([&o, c] { o.action = c->get_name(); });
  return c;
}

// A store error for people (or as JSON), and the exit code it means.
int report(const store_error& e, bool as_json) {
  if (as_json)
    std::cout << json_text(json::object{{"error", {{"type", e.type}, {"message", e.message}}}}) << "\n";
  else
    std::cerr << "troupe: " << e.type << ": " << e.message << "\n";
  return 1;
}

void print(const json::value& v) { std::cout << json_text(v) << "\n"; }

json::object thread_json(const thread_view& t) {
  return {{"thread_id", t.id()},          {"rev", t.rev()},           {"created_at", t.created_at()},
          {"updated_at", t.updated_at()}, {"metadata", t.metadata()}, {"entries", entries_json(t)}};
}

json::array conversations_json(const std::vector<conversation>& list) {
  json::array out;
  for (const conversation& c : list) out.push_back(to_json(c));
  return out;
}

}  // namespace

CLI::App* add_threads_command(CLI::App& app, store_command_options& o) {
  CLI::App* threads = app.add_subcommand("threads", "List, show, fork and delete stored threads.");
  threads->require_subcommand(1);
  with_common(threads->add_subcommand("list", "Every stored thread's id."), o);
  with_common(threads->add_subcommand("show", "A thread's entries."), o)
      ->add_option("id", o.id, "Thread id")
      ->required();
  auto* fork = with_common(threads->add_subcommand("fork", "A new thread with a thread's entries up to --at."), o);
  fork->add_option("id", o.id, "Thread id")->required();
  fork->add_option("--at", o.at, "The last seq the fork keeps")->required();
  fork->add_option("--as", o.new_id, "The fork's id (default: a fresh one)");
  with_common(threads->add_subcommand("delete", "Delete a thread, its entries and its conversation."), o)
      ->add_option("id", o.id, "Thread id")
      ->required();
  return threads;
}

CLI::App* add_conversations_command(CLI::App& app, store_command_options& o) {
  CLI::App* convs = app.add_subcommand("conversations", "List, show, trace, archive and delete conversations.");
  convs->require_subcommand(1);
  auto* list = with_common(convs->add_subcommand("list", "A user's active conversations, most recent first."), o);
  list->add_option("--user", o.user, "User id")->required();
  list->add_option("--limit", o.limit, "At most this many")->capture_default_str();
  list->add_option("--offset", o.offset, "Skip this many")->capture_default_str();
  auto* show = with_common(convs->add_subcommand("show", "A conversation and its last messages."), o);
  show->add_option("id", o.id, "Conversation id")->required();
  show->add_option("--limit", o.limit, "Messages shown")->capture_default_str();
  with_common(convs->add_subcommand("trace", "Every entry of a conversation, with totals."), o)
      ->add_option("id", o.id, "Conversation id")
      ->required();
  with_common(convs->add_subcommand("archive", "Archive a conversation: its chat starts a new one next time."), o)
      ->add_option("id", o.id, "Conversation id")
      ->required();
  with_common(convs->add_subcommand("delete", "Delete a conversation with its thread and entries."), o)
      ->add_option("id", o.id, "Conversation id")
      ->required();
  return convs;
}

int run_threads(const store_command_options& o) {
  const store_handle store = store_for(o.store, default_store_uri());
  thread_store& threads = *store.threads;
  if (o.action == "list") {
    const auto ids = threads.list();
    if (o.json) {
      json::array out(ids.begin(), ids.end());
      print(json::object{{"threads", std::move(out)}});
    } else {
      for (const auto& id : ids) std::cout << id << "\n";
    }
    return 0;
  }
  if (o.action == "show") {
    auto t = threads.load(o.id);
    if (!t) return report(t.error(), o.json);
    if (o.json) {
      print(thread_json(*t));
      return 0;
    }
    std::cout << "thread " << t->id() << ": " << t->size() << " entries, rev " << t->rev() << ", created "
              << iso_time(t->created_at()) << ", updated " << iso_time(t->updated_at()) << "\n";
    if (const auto* from = t->metadata().if_contains("forked_from"))
      std::cout << "forked from " << json_text(*from) << "\n";
    for (const entry& e : t->entries()) print_entry(std::cout, e);
    return 0;
  }
  if (o.action == "fork") {
    const std::string new_id = o.new_id.empty() ? random_ids().next("thread") : o.new_id;
    auto child = threads.fork(o.id, *o.at, new_id, wall_clock_ms());  // --at is required
    if (!child) return report(child.error(), o.json);
    if (o.json)
      print(json::object{
          {"thread_id", child->id()}, {"forked_from", o.id}, {"at_seq", *o.at}, {"entries", child->size()}});
    else
      std::cout << "forked " << o.id << " at seq " << *o.at << " into " << child->id() << " (" << child->size()
                << " entries)\n";
    return 0;
  }
  if (o.action == "delete") {
    if (!threads.remove(o.id)) return report(store_error{"not_found", "no thread " + o.id}, o.json);
    if (o.json)
      print(json::object{{"deleted", o.id}});
    else
      std::cout << "deleted thread " << o.id << "\n";
    return 0;
  }
  throw usage_error("unknown threads command " + o.action);
}

int run_conversations(const store_command_options& o) {
  const store_handle store = store_for(o.store, default_store_uri());
  conversation_store& convs = *store.conversations;
  if (o.action == "list") {
    auto list = convs.list_conversations(o.user, o.limit, o.offset);
    if (!list) return report(list.error(), o.json);
    if (o.json)
      print(json::object{{"conversations", conversations_json(*list)}});
    else
      for (const conversation& c : *list) print_conversation(std::cout, c);
    return 0;
  }
  if (o.action == "show") {
    auto c = convs.find_conversation(o.id);
    if (!c) return report(c.error(), o.json);
    auto history = convs.history(o.id, o.limit);
    if (!history) return report(history.error(), o.json);
    if (o.json) {
      json::array messages;
      for (const entry& e : *history) messages.push_back(entry_json(e));
      print(json::object{{"conversation", to_json(*c)}, {"history", std::move(messages)}});
      return 0;
    }
    print_conversation(std::cout, *c);
    std::cout << "user " << c->user_id << ", thread " << c->thread_id << ", created " << iso_time(c->created_at)
              << "\n";
    for (const entry& e : *history) print_entry(std::cout, e);
    return 0;
  }
  if (o.action == "trace") {
    auto tr = convs.trace(o.id);
    if (!tr) return report(tr.error(), o.json);
    if (o.json) {
      print(json::object{
          {"conversation", to_json(tr->about)}, {"totals", to_json(tr->totals)}, {"entries", entries_json(tr->log)}});
      return 0;
    }
    print_conversation(std::cout, tr->about);
    for (const entry& e : tr->log.entries()) print_entry(std::cout, e);
    const conversation_totals& t = tr->totals;
    std::cout << t.entries << " entries: " << t.messages << " messages (" << t.user_messages << " user, "
              << t.assistant_messages << " assistant), " << t.tool_calls << " tool calls, over "
              << static_cast<double>(t.duration_ms) / 1000.0 << " s\n";
    return 0;
  }
  if (o.action == "archive") {
    auto c = convs.archive_conversation(o.id);
    if (!c) return report(c.error(), o.json);
    if (o.json)
      print(json::object{{"conversation", to_json(*c)}});
    else
      std::cout << "archived conversation " << o.id << "\n";
    return 0;
  }
  if (o.action == "delete") {
    auto done = convs.delete_conversation(o.id);
    if (!done) return report(done.error(), o.json);
    if (o.json)
      print(json::object{{"deleted", o.id}});
    else
      std::cout << "deleted conversation " << o.id << " with its thread\n";
    return 0;
  }
  throw usage_error("unknown conversations command " + o.action);
}

}  // namespace troupe::cli
