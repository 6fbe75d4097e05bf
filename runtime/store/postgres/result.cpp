#include "runtime/store/postgres/result.hpp"

#include <string_view>

namespace troupe::postgres {

store_error result::error(PGconn* c, const std::string& what) const {
  const char* state = r_ ? PQresultErrorField(r_, PG_DIAG_SQLSTATE) : nullptr;
  std::string message = r_ ? PQresultErrorMessage(r_) : "";
  if (message.empty()) message = PQerrorMessage(c);
  message = trimmed_message(std::move(message));
  if (state && std::string_view(state) == "23505") return store_error{"conflict", what + ": " + message};
  // query_canceled: the statement ran past statement_timeout, and the server undid it.
  if (state && std::string_view(state) == "57014") return store_error{"timeout", what + ": " + message};
  // lock_not_available: a row it needed was held by another transaction past lock_timeout.
  if (state && std::string_view(state) == "55P03")
    return store_error{"timeout", what + ": " + message + " (another transaction holds the row; nothing was written)"};
  return store_error{"io", what + ": " + message};
}

result run(PGconn* c, const char* sql, const std::vector<param>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const param& p : params) values.push_back(p ? p->c_str() : nullptr);
  return result(PQexecParams(c, sql, static_cast<int>(params.size()), nullptr, values.data(), nullptr, nullptr, 0));
}

std::string trimmed_message(std::string message) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message;
}

}  // namespace troupe::postgres
