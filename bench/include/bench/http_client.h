#pragma once
// The benchmark's HTTP/1.1 client (Boost.Beast on one Asio io_context): many concurrent
// streamed POSTs whose body bytes are handed over, with their arrival time, as they come in;
// and blocking calls for the small control requests (models, tokenize). Network failures are
// results, never exceptions.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace sandwich::bench {

// http://host[:port][/prefix] (https is not supported). The prefix is prepended to every path.
struct Url {
  std::string host;
  uint16_t port = 80;
  std::string prefix;  // "" or "/something", no trailing slash
  // Throws std::invalid_argument with a message naming the URL.
  static Url parse(const std::string& text);
  std::string str() const;
};

// How a request ended, as the transport saw it. error_kind is "" when a complete HTTP response
// arrived (whatever its status); else "connect", "timeout", "disconnected" or "protocol".
struct HttpEnd {
  std::string error_kind;
  std::string message;
  int status = 0;
  std::string body;  // the whole body of a non-streamed or non-200 response (capped at 1 MiB)
};

class HttpClient {
 public:
  using Clock = std::chrono::steady_clock;
  struct StreamHandlers {
    // Body bytes of a 200 response, as each read delivers them (on an I/O thread).
    std::function<void(std::string_view bytes, Clock::time_point at)> on_body;
    // Called exactly once, last (on an I/O thread).
    std::function<void(const HttpEnd& end, Clock::time_point at)> on_end;
  };

  explicit HttpClient(int io_threads = 1);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts a POST whose 200 response is streamed to handlers.on_body; returns at once. The
  // timeout covers connecting, sending and the whole response.
  void post_stream(const Url& url, const std::string& path, std::string body, double timeout_s,
                   StreamHandlers handlers, const std::string& bearer = {});

  // Blocking request; the response body is in the result.
  HttpEnd request(const Url& url, const std::string& method, const std::string& path,
                  std::string body, double timeout_s, const std::string& bearer = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandwich::bench
