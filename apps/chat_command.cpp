#include "apps/commands.hpp"

#include "context/projection.hpp"
#include "json/json_parse.hpp"
#include "json/json_text.hpp"
#include "runtime/random_ids.hpp"

#include <editline/readline.h>

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>

namespace troupe::cli {

namespace {

std::atomic<bool> interrupted{false};

void on_sigint(int) { interrupted = true; }

bool read_line(bool tty, std::string& line, const char* prompt = "you> ") {
  if (!tty) return static_cast<bool>(std::getline(std::cin, line));
  char* raw = readline(prompt);
  if (!raw) return false;
  line = raw;
  if (!line.empty()) add_history(raw);
  std::free(raw);
  return true;
}

// The answer streams as it is written.
void print_delta(const stream_event& e) {
  if (const auto* d = std::get_if<delta_event>(&e); d && !d->text.empty()) {
    std::fwrite(d->text.data(), 1, d->text.size(), stdout);
    std::fflush(stdout);
  }
}

// Calls whose usage is unknown are said so, not counted as zero tokens.
std::string without_usage(const token_usage& u) {
  if (!u.calls_without_usage) return {};
  return ", " + std::to_string(u.calls_without_usage) + (u.calls_without_usage == 1 ? " call" : " calls") +
         " without usage";
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

// Waits for a request's reply; Ctrl-C or --timeout cancel it.
reply await_reply(const request& r, std::chrono::steady_clock::time_point limit) {
  std::optional<reply> got;
  while (!(got = r.await(std::chrono::milliseconds(100)))) {
    if (interrupted.exchange(false)) r.cancel("interrupted by Ctrl-C");
    if (std::chrono::steady_clock::now() > limit) r.cancel("the question took longer than --timeout");
  }
  return std::move(*got);
}

// The user's decision on one call the turn waits for: y (run it), n (do
// not), or edit (run it with new JSON arguments, checked against the
// tool's schema and asked again until they fit); a question is answered
// with a line. Nullopt when the input ends first.
std::optional<decision> ask_user(const cli_session& s, bool tty, const std::string& request_id,
                                 const open_approval& call) {
  decision d;
  d.request_id = request_id;
  d.tool_call_id = call.tool_call_id;
  d.decided_by = "chat";
  std::string line;
  if (call.question) {
    std::cout << "[question] " << call.reason << "\n" << std::flush;
    if (!read_line(tty, line, "answer> ")) return std::nullopt;
    d.answer = verdict::approve;
    d.response = trim(line);
    return d;
  }
  const auto tool = s.rt->tools().find(call.tool);
  std::cout << "[approval] " << call.tool << " " << json_text(call.arguments)
            << (call.reason.empty() ? "" : " (" + call.reason + ")") << ": run it? y/n/edit\n"
            << std::flush;
  for (;;) {
    if (!read_line(tty, line, "y/n/edit> ")) return std::nullopt;
    const std::string answer = trim(line);
    if (answer == "y" || answer == "yes") {
      d.answer = verdict::approve;
      return d;
    }
    if (answer == "n" || answer == "no") {
      d.answer = verdict::reject;
      d.message = "the user declined the call";
      return d;
    }
    if (answer != "e" && answer != "edit") {
      std::cout << "answer y, n or edit\n" << std::flush;
      continue;
    }
    std::cout << "new arguments (one JSON object):\n" << std::flush;
    if (!read_line(tty, line, "arguments> ")) return std::nullopt;
    boost::system::error_code ec;
    const boost::json::value parsed = parse_json(line, ec);
    std::optional<error_info> invalid;
    if (ec || !parsed.is_object())
      invalid = error_info::of(error_type::invalid_arguments, "not a JSON object");
    else if (tool)
      invalid = tool->validate(parsed.as_object());
    if (invalid) {
      std::cout << "[" << invalid->type << ": " << invalid->message << "] run it? y/n/edit\n" << std::flush;
      continue;
    }
    d.answer = verdict::edit;
    d.arguments = parsed.as_object();
    return d;
  }
}

}  // namespace

int run_chat(const model_options& o) {
  cli_session s(o, default_store_uri());
  const bool tty = isatty(STDIN_FILENO);
  // Ctrl-C cancels the answer being written, not the chat.
  std::signal(SIGINT, on_sigint);
  std::string& thread = s.thread_id;
  token_usage session;
  int failures = 0;
  if (tty)
    std::cout << "troupe chat with " << s.model
              << ". /reset starts a new thread, /thread shows it, /context its last context, /quit leaves.\n";

  std::string line;
  while (read_line(tty, line)) {
    const std::string text = trim(line);
    if (text.empty()) continue;
    if (text == "/quit" || text == "/exit") break;
    if (text == "/reset") {
      s.start_over();
      if (s.conv) std::cout << "new conversation " << s.conv->id << ", ";
      std::cout << "new thread " << thread << "\n";
      continue;
    }
    if (text == "/thread") {
      auto t = s.assistant->snapshot(thread);
      std::cout << "thread " << thread << ": " << (t ? t->size() : 0) << " entries\n";
      continue;
    }
    if (text == "/context") {
      // The projection the next call would start from (the thread as it is).
      if (auto t = s.assistant->snapshot(thread)) {
        const context_meta m = project(*t, s.policy, {}, o.system).meta;
        std::cout << "context: " << m.estimated_tokens << " of " << m.budget << " tokens, " << m.entries_included
                  << " of " << m.entries_total << " entries" << (m.truncated ? ", older entries left out" : "")
                  << (m.summary_used ? ", with a summary" : "") << (m.oversized ? ", over budget" : "") << "\n";
      }
      continue;
    }
    if (text.front() == '/') {
      std::cout << "unknown command " << text << " (try /reset, /thread, /context, /quit)\n";
      continue;
    }

    interrupted = false;
    ask_options a;
    a.thread_id = thread;
    a.on_event = print_delta;
    const auto started = std::chrono::steady_clock::now();
    request r = s.assistant->ask(text, std::move(a));
    const auto limit = started + std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_seconds * 1000));
    std::optional<reply> got = await_reply(r, limit);
    // A paused turn is decided here, call by call; the last decision's
    // handle carries the request on to its end (or its next pause), and its
    // answer streams as an ask's does.
    while (got->paused()) {
      const auto d = ask_user(s, tty, got->request_id, got->pending.front());
      if (!d) {
        r.cancel("the input ended before the decision");
        got = await_reply(r, limit);
        break;
      }
      got = await_reply(s.assistant->decide(*d, {.thread_id = thread, .on_event = print_delta}), limit);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::cout << "\n";
    session += got->usage;
    std::FILE* notes = tty ? stdout : stderr;
    if (!got->ok()) {
      const error_info& e = std::get<error_info>(got->outcome);
      if (e.type != error_type::cancelled) ++failures;  // the user's own Ctrl-C is no failure
      std::fprintf(notes, "[%s: %s]\n", e.type.c_str(), e.message.c_str());
    }
    std::fprintf(notes, "(%.1f s, %lld tokens in, %lld out%s)\n", seconds,
                 static_cast<long long>(got->usage.input_tokens), static_cast<long long>(got->usage.output_tokens),
                 without_usage(got->usage).c_str());
    std::fflush(notes);
  }
  std::fprintf(tty ? stdout : stderr, "session: %lld tokens in, %lld out%s\n",
               static_cast<long long>(session.input_tokens), static_cast<long long>(session.output_tokens),
               without_usage(session).c_str());
  s.rt->shutdown();
  return failures == 0 ? 0 : 1;
}

}  // namespace troupe::cli
