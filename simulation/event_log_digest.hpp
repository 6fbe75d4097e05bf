#pragma once
// What a report needs from a simulation's event log, read as a stream: the
// log of a large run is hundreds of megabytes, so only aggregates are kept,
// each bounded (digest_limits), and the lines a digest does not need (an
// activation's observation, the bulk of the log) are skipped unparsed.
//
// The spread of posts: a repost action's arguments name the post reposted
// (post_id); its result may name the original post (root) when that post was
// itself a repost, and the new post's id (id). The most reposted originals
// are found with a bounded table of candidates (Misra–Gries): exact while
// fewer than `candidate_posts` originals were reposted, and otherwise every
// post reposted more than reposts / (candidate_posts + 1) times is found;
// their counts are then taken exactly in a second pass over the log.

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace troupe {

struct digest_limits {
  std::size_t top_posts = 5;
  std::size_t answers_per_interview = 50;
  std::size_t reposts_per_post = 100;  // who reposted from whom, shown per post
  std::size_t interventions = 100;
  std::size_t candidate_posts = 65'536;
};

struct interview_answer {
  std::string agent;
  std::string text;        // the answer, or the error's message
  std::string error_type;  // empty: answered
};

// One interview step: its question and what the agents answered.
struct interview_digest {
  std::int64_t step = 0;
  std::int64_t round = 0;  // the last round run before it
  std::string question;
  std::size_t answers = 0;
  std::size_t errors = 0;
  std::vector<interview_answer> shown;  // the first answers, in the log's order
};

struct intervention_digest {
  std::int64_t step = 0;
  std::int64_t round = 0;
  std::string action;
  std::string as;
  std::string arguments;  // JSON text
  std::string result;     // JSON text; empty when refused
  std::string error;      // "type: message" when refused
};

struct error_digest {
  std::size_t count = 0;
  std::string example;  // the first message of that type
};

struct repost_edge {
  std::int64_t round = 0;
  std::string from;  // the author of the post reposted; empty: not in the log
  std::string to;    // the agent who reposted it
};

struct spread_digest {
  std::string root;    // the original post's id
  std::string author;  // empty: the post's making is not in the log
  std::int64_t posted_round = 0;
  std::size_t reposts = 0;
  std::size_t reposters = 0;  // distinct agents
  std::map<std::int64_t, std::size_t> per_round;
  std::vector<repost_edge> edges;  // the first reposts, in the log's order
};

struct event_log_digest {
  std::string name;
  std::string world;
  std::uint64_t seed = 0;
  std::size_t agents = 0;
  std::size_t lines = 0;
  std::size_t activations = 0;
  std::size_t checkpoints = 0;
  std::map<std::string, error_digest> activation_errors;  // by error type
  std::map<std::string, std::size_t> refusals;            // by "action: error type"
  std::vector<interview_digest> interviews;               // by step
  std::vector<intervention_digest> interventions;
  std::size_t interventions_total = 0;
  std::size_t reposts = 0;
  bool spread_exact = true;  // the candidates' table never overflowed
  // When not exact: a post reposted at most this many times may be missing from the ranking.
  std::size_t spread_missing_at_most = 0;
  std::vector<spread_digest> spread;  // the most reposted, most first
};

// A log that cannot be read, or a line that is not an event (not a JSON
// object with an "event" string): the message names the file and the line.
struct event_log_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

event_log_digest digest_event_log(const std::string& path, const digest_limits& limits = {});

}  // namespace troupe
