// The server's limits, each with its clear answer: body size, slow
// clients, too many connections; and a drain with streams open.

#include "support/serve_fixture.hpp"

#include <boost/asio/write.hpp>

#include <filesystem>
#include <functional>
#include <future>
#include <thread>

#include <unistd.h>

using namespace troupe::testing;
namespace json = boost::json;

namespace {

// Alice's stream of a turn on `chat`, read up to its first event.
std::unique_ptr<http_client> open_held(serve_fixture& f, const std::string& chat, const std::string& text) {
  auto c = std::make_unique<http_client>(f.port());
  c->open_stream("/v1/conversations/web/" + chat + "/messages", message_body("helper", text), as_user(alice_key));
  REQUIRE(c->next_event()->name == "conversation");
  return c;
}

// Polls (bounded) for what a server timer brings about.
bool eventually(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done())
    if (std::chrono::steady_clock::now() > until)
      return false;
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return true;
}

}  // namespace

TEST_CASE("serve: a client that stops reading its event stream") {
  serve_fixture f("memory:", "", "write_timeout_seconds = 0.3\nmax_stream_backlog_bytes = 67108864\n");
  SECTION("is disconnected once its writes make no progress for write_timeout, after its turn has ended") {
    // A receive buffer a few KiB small, and nothing read: the turn's 16 MiB
    // fill the sockets' buffers, and the server's write waits on the client.
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket sock(io);
    sock.open(boost::asio::ip::tcp::v4());
    sock.set_option(boost::asio::socket_base::receive_buffer_size(4096));
    sock.connect({boost::asio::ip::make_address("127.0.0.1"), f.port()});
    const std::string body = message_body("helper", "hold-firehose");
    boost::asio::write(sock, boost::asio::buffer("POST /v1/conversations/web/c1/messages HTTP/1.1\r\nHost: x\r\n"
                                                 "Authorization: Bearer " +
                                                 alice_key +
                                                 "\r\nAccept: text/event-stream\r\nContent-Type: "
                                                 "application/json\r\nContent-Length: " +
                                                 std::to_string(body.size()) + "\r\n\r\n" + body));
    REQUIRE(f.model->wait_held("hold-firehose"));
    REQUIRE(f.model->release("hold-firehose"));
    REQUIRE(f.counter->wait_turns(1));
    CHECK(eventually([&] { return f.server->connections() == 0; }));
  }
}

TEST_CASE("serve: a request is judged on its head, before its body is read") {
  // An answer that comes before the body timeout was given without the body.
  serve_fixture f("memory:", "", "body_timeout_seconds = 5\nmax_body_bytes = 1048576\n");
  const std::string post = "POST /v1/conversations/web/c1/messages HTTP/1.1\r\nHost: x\r\n";
  SECTION("a POST without a key announcing a body the limit allows gets its 401 unsent, then the connection closes") {
    http_client c = f.client();
    c.send_raw(post + "Content-Length: 1000000\r\n\r\n");
    const http_reply r = c.read_reply();
    CHECK(r.status == 401);
    CHECK(r.error_type() == "unauthorized");
    CHECK_FALSE(r.keep_alive);
    CHECK(c.closed_by_server());
  }
  SECTION("a POST without a key announcing a huge body is a 401, not a 413") {
    http_client c = f.client();
    c.send_raw(post + "Content-Length: 1073741824\r\n\r\n");
    CHECK(c.read_reply().status == 401);
  }
  SECTION("a POST to no route gets its 404 with its body unsent") {
    http_client c = f.client();
    c.send_raw("POST /v1/nowhere HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + alice_key +
               "\r\nContent-Length: 1000000\r\n\r\n");
    CHECK(c.read_reply().status == 404);
    CHECK(c.closed_by_server());
  }
  SECTION("with a key, a body announced past the limit is a 413 at once") {
    http_client c = f.client();
    c.send_raw(post + "Authorization: Bearer " + alice_key + "\r\nContent-Length: 1073741824\r\n\r\n");
    const http_reply r = c.read_reply();
    CHECK(r.status == 413);
    CHECK(r.error_type() == "body_too_large");
  }
  SECTION("a request that asks for 100 Continue gets it before it sends its body, then its answer") {
    http_client c = f.client();
    const std::string body = message_body("helper", "hi");
    c.send_raw(post + "Authorization: Bearer " + alice_key +
               "\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n");
    CHECK(c.read_reply().status == 100);
    c.send_raw(body);
    const http_reply r = c.read_reply();
    CHECK(r.status == 200);
    CHECK(r.json().at("answer") == "echo: hi");
  }
  SECTION("a refused request without a body leaves the connection open for the next") {
    http_client c = f.client();
    CHECK(c.send(http::verb::get, "/v1/agents").status == 401);
    CHECK(c.send(http::verb::get, "/healthz").status == 200);
  }
}

TEST_CASE("serve: limits") {
  SECTION("a body over the limit is a 413") {
    serve_fixture f("memory:", "", "max_body_bytes = 64\n");
    http_client c = f.client();
    const http_reply r = c.send(http::verb::post, "/v1/conversations/web/c1/messages",
                                message_body("helper", std::string(100, 'x')), as_user(alice_key));
    CHECK(r.status == 413);
    CHECK(r.error_type() == "body_too_large");
  }
  SECTION("a client that does not finish its request head within the header timeout gets a 408, then is disconnected") {
    serve_fixture f("memory:", "", "header_timeout_seconds = 0.2\n");
    http_client c = f.client();
    c.send_raw("GET /healthz HTTP/1.1\r\nHost: x\r\n");  // never ends its head
    const http_reply r = c.read_reply();
    CHECK(r.status == 408);
    CHECK(r.error_type() == "request_timeout");
    CHECK(c.closed_by_server());
  }
  SECTION("a client that does not send its whole body within the body timeout gets a 408, then is disconnected") {
    serve_fixture f("memory:", "", "body_timeout_seconds = 0.2\n");
    http_client c = f.client();
    c.send_raw("POST /v1/conversations/web/c1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + alice_key +
               "\r\nContent-Length: 100\r\n\r\n{\"a");
    const http_reply r = c.read_reply();
    CHECK(r.status == 408);
    CHECK(r.error_type() == "request_timeout");
    CHECK(c.closed_by_server());
  }
  SECTION("an idle keep-alive connection is closed after the header timeout, not before an answer") {
    serve_fixture f("memory:", "", "header_timeout_seconds = 0.2\n");
    http_client c = f.client();
    CHECK(c.send(http::verb::get, "/healthz").status == 200);
    CHECK(c.closed_by_server());
  }
  SECTION("a connection past max_connections is answered 503 and closed") {
    serve_fixture f("memory:", "", "max_connections = 2\n");
    http_client one = f.client(), two = f.client();
    // Answered requests prove both connections are open and counted.
    REQUIRE(one.send(http::verb::get, "/healthz").status == 200);
    REQUIRE(two.send(http::verb::get, "/healthz").status == 200);
    http_client three = f.client();
    const http_reply r = three.read_reply();
    CHECK(r.status == 503);
    CHECK(r.error_type() == "too_many_connections");
    CHECK(r.header("retry-after") == "1");
    one.close();
    two.close();
  }
  SECTION("malformed HTTP is a 400") {
    serve_fixture f;
    http_client c = f.client();
    c.send_raw("GARBAGE\r\n\r\n");
    CHECK(c.read_reply().status == 400);
  }
}

TEST_CASE("serve: a user's unfinished turns are bounded across their conversations") {
  serve_fixture f("memory:", "", "max_turns_per_user = 2\n");
  const auto alice = as_user(alice_key);
  auto first = open_held(f, "c1", "hold-one");
  auto second = open_held(f, "c2", "hold-two");
  REQUIRE(f.model->wait_held("hold-one"));
  REQUIRE(f.model->wait_held("hold-two"));

  SECTION("a third turn on another conversation is a 429 with Retry-After") {
    const http_reply r =
        f.client().send(http::verb::post, "/v1/conversations/web/c3/messages", message_body("helper", "hi"), alice);
    CHECK(r.status == 429);
    CHECK(r.error_type() == "too_many_turns");
    CHECK(r.header("retry-after") == "1");
  }
  SECTION("the OpenAI endpoint counts against the same bound") {
    const http_reply r = f.client().send(http::verb::post, "/v1/chat/completions",
                                         R"({"model":"helper","messages":[{"role":"user","content":"hi"}]})", alice);
    CHECK(r.status == 429);
    CHECK(r.json().at("error").at("code") == "too_many_turns");
  }
  SECTION("another user is not held by it") {
    const http_reply r = f.client().send(http::verb::post, "/v1/conversations/web/c3/messages",
                                         message_body("helper", "hi"), as_user(bob_key));
    CHECK(r.status == 200);
  }
  SECTION("once a turn ends, the user may start another") {
    REQUIRE(f.model->release("hold-one"));
    REQUIRE(first->rest_of_stream().back().name == "message.completed");
    REQUIRE(f.counter->wait_turns(1));
    const http_reply r =
        f.client().send(http::verb::post, "/v1/conversations/web/c3/messages", message_body("helper", "hi"), alice);
    CHECK(r.status == 200);
  }
  f.model->release("hold-one");
  f.model->release("hold-two");
}

TEST_CASE("serve: draining with streams open") {
  serve_fixture f("memory:", "drain_deadline_seconds = 3\n");
  const auto alice = as_user(alice_key);
  auto finishing = open_held(f, "c1", "hold-finishes");
  auto stuck = open_held(f, "c2", "hold-stuck");
  REQUIRE(f.model->wait_held("hold-finishes"));
  REQUIRE(f.model->wait_held("hold-stuck"));
  http_client idle = f.client();
  REQUIRE(idle.send(http::verb::get, "/healthz").status == 200);

  auto drained = std::async(std::launch::async, [&] { f.server->drain(); });
  while (!f.server->draining()) std::this_thread::yield();

  SECTION("idle connections are closed; running turns may finish; the rest end with a shutdown error") {
    CHECK(idle.closed_by_server());
    REQUIRE(f.model->release("hold-finishes"));
    const auto done = finishing->rest_of_stream();
    REQUIRE_FALSE(done.empty());
    CHECK(done.back().name == "message.completed");
    const auto ended = stuck->rest_of_stream();
    REQUIRE_FALSE(ended.empty());
    CHECK(ended.back().name == "error");
    CHECK(ended.back().data.at("error").at("type") == "shutdown");
    drained.get();
    CHECK(f.server->turns().unfinished_count() == 0);
  }
}

TEST_CASE("serve: a failure of the store's own is answered without the server's paths") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("troupe-serve-store-error-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  serve_fixture f("sqlite:" + (dir / "serve.db").string());
  // A reader's connection opens the file afresh, and finds it gone.
  std::filesystem::remove_all(dir);
  const http_reply r = f.client().send(http::verb::get, "/v1/conversations", "", as_user(alice_key));
  REQUIRE(r.status == 503);
  CHECK(r.error_type() == "store_io");
  CHECK(r.body.find('/') == std::string::npos);
  CHECK(r.body.find(dir.string()) == std::string::npos);
}

TEST_CASE("serve: a user's requests past their burst are refused with 429 and Retry-After") {
  // A token every 100 s: none comes back while the test runs.
  serve_fixture f("memory:", "", "requests_per_second = 0.01\nrequest_burst = 3\n");
  http_client c = f.client();
  for (int i = 0; i < 3; ++i)
    REQUIRE(c.send(http::verb::get, "/v1/conversations", "", as_user(alice_key)).status == 200);
  const http_reply refused = c.send(http::verb::get, "/v1/conversations", "", as_user(alice_key));
  CHECK(refused.status == 429);
  CHECK(refused.error_type() == "rate_limited");
  CHECK(refused.header("retry-after") == "100");
  SECTION("another user has a bucket of their own") {
    CHECK(c.send(http::verb::get, "/v1/conversations", "", as_user(bob_key)).status == 200);
  }
}
