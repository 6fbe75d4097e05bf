#pragma once
// What a client is told of a failure that is the server's own. A store's or
// the process's messages name files, hosts and statements (the database's
// absolute path, for one): they go to the server's log, and the client gets
// the error's type with a message that says where the details are.

#include <string>
#include <string_view>

namespace troupe::serve {

// True for the error types (turn errors and the store's, as "store_io")
// whose messages are not the client's to read.
bool server_side_error(std::string_view type);

// `message` itself for the client's own errors; otherwise a generic one,
// after logging `message` with the type.
std::string client_message(std::string_view type, const std::string& message);

}  // namespace troupe::serve
