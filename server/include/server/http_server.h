#pragma once
// A small HTTP/1.1 server on Boost.Beast: keep-alive, a body size limit, caps on open
// connections (in all and per client address), deadlines for slow clients, a bounded send
// buffer, responses that may be completed later from any thread, chunked streaming (for
// server-sent events; HTTP/1.0 clients get the raw body ended by closing the connection),
// 'Expect: 100-continue', and notice of clients that disconnect while their request runs (a
// failed write or a reset; a half-close is not a disconnect).
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace sandwich::server {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // path and query
  std::string path;                            // target without the query
  std::map<std::string, std::string> headers;  // lower-case names; a repeated one keeps its last
  std::vector<std::string> repeated_headers;   // lower-case names sent more than once
  std::string body;
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// The handle a handler uses to answer. Thread-safe; every call after the client has gone (or
// after the answer is complete) is ignored.
class Responder {
 public:
  virtual ~Responder() = default;
  // Sends a whole response.
  virtual void reply(HttpResponse r) = 0;
  // Starts a chunked response (e.g. text/event-stream); then send() pieces and end().
  virtual void start_stream(int status, const std::string& content_type) = 0;
  virtual void send(std::string piece) = 0;
  virtual void end() = 0;
  // Called once, on an I/O thread, if the client disconnects before the answer is complete.
  virtual void on_disconnect(std::function<void()> fn) = 0;
  virtual bool disconnected() const = 0;
};

// The request is the handler's: it may move from it (a body handed on to another thread).
using Handler = std::function<void(HttpRequest&, std::shared_ptr<Responder>)>;
// Looks at a request that sent 'Expect: 100-continue' before its body is read (HttpRequest::body
// is empty): a response refuses it at once (and the connection closes), so the client never sends
// a body the server would throw away. Runs on an I/O thread; must be quick. The handler still
// sees every request it lets through, and every request without Expect.
using HeaderCheck = std::function<std::optional<HttpResponse>(const HttpRequest&)>;

// One answered request, for an access log. A response sent before the request's head could be
// read (a malformed request, a connection over the limit) has method and path "-".
struct HttpExchange {
  std::string method, path;
  int status = 0;      // 499 (nginx's "client closed request"): the client left before the answer
  double seconds = 0;  // from the request's head to the answer's last byte
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  // An 8 MiB prompt with JSON's escapes (up to 2x for non-ASCII text sent as \uXXXX) fits.
  size_t max_body_bytes = 32u << 20;
  int max_connections = 256;
  // Connections one client address may hold at once; 0 means half of max_connections.
  int max_connections_per_client = 0;
  // Beyond max_connections, this many more connections may ask for reserved_paths (GET) only,
  // so that a full pool still answers health checks and scrapes; others get 503.
  int reserved_connections = 8;
  std::vector<std::string> reserved_paths;
  int io_threads = 1;
  std::vector<int> io_cpus;  // pin I/O threads here when given
  // Slow clients: the whole request head must arrive within header_timeout (from the connection's
  // start, or from the first byte of a later request), the body within body_timeout after it; an
  // idle keep-alive connection closes after keep_alive_timeout.
  double header_timeout_seconds = 10;
  double body_timeout_seconds = 30;
  double keep_alive_timeout_seconds = 5;
  // Clients that do not read: a write that makes no progress for write_timeout, or more than
  // max_send_buffer_bytes of a stream waiting to be written, aborts the request as a disconnect.
  double write_timeout_seconds = 30;
  size_t max_send_buffer_bytes = 1u << 20;
  // CORS: origins whose browser requests are allowed ("*": any). Empty: no CORS headers at all.
  // A request with an allowed Origin gets Access-Control-Allow-Origin on its response, and its
  // preflight (OPTIONS with Access-Control-Request-Method) a 204 naming the methods and headers.
  std::vector<std::string> allowed_origins;
  // Called on an I/O thread for every request answered or abandoned while it ran.
  std::function<void(const HttpExchange&)> on_exchange;
};

// Counts since the start, for /metrics.
struct HttpServerStats {
  int open_connections = 0;
  uint64_t refused_max_connections = 0, refused_per_client = 0;
  uint64_t header_timeouts = 0, body_timeouts = 0;
  uint64_t aborted_send_buffer_full = 0, aborted_write_timeout = 0;
};

class HttpServer {
 public:
  // Binds and starts listening (throws std::runtime_error if the address is taken).
  HttpServer(const HttpServerOptions& options, Handler handler, HeaderCheck check = {});
  ~HttpServer();
  uint16_t port() const;  // the bound port (useful with port 0)
  // Runs the I/O threads; returns at once.
  void start();
  // Stops accepting new connections; open ones keep going.
  void stop_accepting();
  // Stops everything and joins the I/O threads.
  void stop();
  int open_connections() const;
  HttpServerStats stats() const;
  // Runs fn on the I/O threads' executor (for signal handling and timers).
  void post(std::function<void()> fn);
  // Calls fn on SIGINT/SIGTERM (on an I/O thread).
  void on_signal(std::function<void(int)> fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The JSON error body OpenAI clients expect. The message may hold any bytes (invalid UTF-8 is
// replaced); an empty code is null.
HttpResponse json_error(int status, const std::string& message, const std::string& type,
                        const std::string& param = {}, const std::string& code = {});

}  // namespace sandwich::server
