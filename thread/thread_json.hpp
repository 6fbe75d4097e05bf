#pragma once
// Threads and entries as JSON, the form the stores, the command line and
// traces share:
//
//   {"id", "rev", "created_at", "updated_at", "metadata": {...},
//    "stats": {"entry_count", "by_kind": {...}},
//    "entries": [{"id", "seq", "at", "kind", "payload", "refs"}, ...]}

#include "json/decode_error.hpp"
#include "thread/thread.hpp"

#include <boost/json/value.hpp>

namespace troupe {

boost::json::value to_json(const entry& e);
boost::json::value to_json(const thread_view& t);

decoded<entry> decode_entry(const boost::json::value& v, std::string path);
// `stats` is derived and ignored on input; everything else is checked.
decoded<thread> decode_thread(const boost::json::value& v);

}  // namespace troupe
