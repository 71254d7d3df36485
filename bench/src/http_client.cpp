#include "bench/http_client.h"

#include <utility>  // Boost 1.74 asio needs it under C++20 before its own headers

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <limits>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace sandwich::bench {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

Url Url::parse(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("bad endpoint URL '" + text + "': " + why);
  };
  std::string rest = text;
  if (rest.rfind("https://", 0) == 0) throw bad("https is not supported; use http://");
  if (rest.rfind("http://", 0) == 0)
    rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos)
    throw bad("only http:// is supported");
  Url u;
  const size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  if (slash != std::string::npos) u.prefix = rest.substr(slash);
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  std::string port;
  if (!hostport.empty() && hostport.front() == '[') {  // [IPv6]:port
    const size_t close = hostport.find(']');
    if (close == std::string::npos) throw bad("unclosed '['");
    u.host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size()) {
      if (hostport[close + 1] != ':') throw bad("expected ':' after ']'");
      port = hostport.substr(close + 2);
    }
  } else if (const size_t colon = hostport.rfind(':'); colon != std::string::npos) {
    u.host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  } else {
    u.host = hostport;
  }
  if (u.host.empty()) throw bad("no host");
  if (!port.empty()) {
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
      throw bad("bad port");
    const int p = std::stoi(port);
    if (p < 1 || p > 65535) throw bad("port must be 1..65535");
    u.port = static_cast<uint16_t>(p);
  }
  return u;
}

std::string Url::str() const {
  const bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + prefix;
}

namespace {

constexpr size_t kMaxKeptBody = 1u << 20;

// One request from resolve to the last body byte, on its own strand.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  using Clock = HttpClient::Clock;
  Exchange(net::io_context& ioc, Url url, http::request<http::string_body> req, double timeout_s,
           bool streamed, HttpClient::StreamHandlers handlers)
      : strand_(net::make_strand(ioc)),
        resolver_(strand_),
        stream_(strand_),
        url_(std::move(url)),
        req_(std::move(req)),
        streamed_(streamed),
        handlers_(std::move(handlers)) {
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(timeout_s));
  }

  void start() {
    net::dispatch(strand_, [self = shared_from_this()] {
      self->resolver_.async_resolve(self->url_.host, std::to_string(self->url_.port),
                                    tcp::resolver::numeric_service,
                                    beast::bind_front_handler(&Exchange::on_resolve, self));
    });
  }

 private:
  void on_resolve(beast::error_code ec, const tcp::resolver::results_type& results) {
    if (ec) return fail("connect", "cannot resolve " + url_.host + ": " + ec.message());
    stream_.expires_at(deadline_);
    stream_.async_connect(results,
                          beast::bind_front_handler(&Exchange::on_connect, shared_from_this()));
  }

  void on_connect(beast::error_code ec, const tcp::endpoint&) {
    if (ec == beast::error::timeout)
      return fail("timeout", "timed out connecting to " + url_.str());
    if (ec) return fail("connect", "cannot connect to " + url_.str() + ": " + ec.message());
    stream_.expires_at(deadline_);
    http::async_write(stream_, req_,
                      beast::bind_front_handler(&Exchange::on_write, shared_from_this()));
  }

  void on_write(beast::error_code ec, size_t) {
    if (ec) return fail(ec, "sending the request");
    parser_.emplace();
    // A long SSE stream may pass Beast's 8 MB default. (boost::none would mean "no limit", but
    // Boost 1.74 compares a Content-Length against the empty optional and fails every body.)
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    stream_.expires_at(deadline_);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Exchange::on_header, shared_from_this()));
  }

  void on_header(beast::error_code ec, size_t) {
    if (ec) return fail(ec, "reading the response header");
    status_ = parser_->get().result_int();
    read_some();
  }

  void read_some() {
    if (parser_->is_done()) return finish(Clock::now());
    auto& body = parser_->get().body();
    body.data = chunk_;
    body.size = sizeof chunk_;
    stream_.expires_at(deadline_);
    http::async_read_some(stream_, buffer_, *parser_,
                          beast::bind_front_handler(&Exchange::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, size_t) {
    const auto now = Clock::now();
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = sizeof chunk_ - parser_->get().body().size;
    if (got > 0) {
      if (streamed_ && status_ == 200) {
        if (handlers_.on_body) handlers_.on_body(std::string_view(chunk_, got), now);
      } else if (body_.size() < kMaxKeptBody) {
        body_.append(chunk_, std::min(got, kMaxKeptBody - body_.size()));
      }
    }
    if (ec) return fail(ec, "reading the response body");
    read_some();
  }

  void fail(beast::error_code ec, const std::string& during) {
    std::string kind = "disconnected";
    if (ec == beast::error::timeout)
      kind = "timeout";
    else if (ec.category() == http::make_error_code(http::error::partial_message).category() &&
             ec != http::error::partial_message && ec != http::error::end_of_stream)
      kind = "protocol";
    fail(kind, (kind == "timeout" ? "timed out " : "error ") + during + ": " + ec.message());
  }

  void fail(const std::string& kind, const std::string& message) {
    HttpEnd end;
    end.error_kind = kind;
    end.message = message;
    end.status = status_;
    end.body = std::move(body_);
    complete(end, Clock::now());
  }

  void finish(Clock::time_point at) {
    HttpEnd end;
    end.status = status_;
    end.body = std::move(body_);
    complete(end, at);
  }

  void complete(const HttpEnd& end, Clock::time_point at) {
    if (done_) return;
    done_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    if (handlers_.on_end) handlers_.on_end(end, at);
  }

  net::strand<net::io_context::executor_type> strand_;
  tcp::resolver resolver_;
  beast::tcp_stream stream_;
  Url url_;
  http::request<http::string_body> req_;
  bool streamed_;
  HttpClient::StreamHandlers handlers_;
  Clock::time_point deadline_;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::buffer_body>> parser_;
  char chunk_[16384];
  int status_ = 0;
  std::string body_;
  bool done_ = false;
};

http::request<http::string_body> make_request(const Url& url, const std::string& method,
                                              const std::string& path, std::string body,
                                              bool streamed, const std::string& bearer) {
  const http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) throw std::invalid_argument("unknown HTTP method " + method);
  http::request<http::string_body> req{verb, url.prefix + path, 11};
  req.set(http::field::host, url.host + ":" + std::to_string(url.port));
  req.set(http::field::user_agent, "sandwich-bench");
  if (!body.empty() || verb == http::verb::post)
    req.set(http::field::content_type, "application/json");
  req.set(http::field::accept, streamed ? "text/event-stream" : "application/json");
  if (!bearer.empty()) req.set(http::field::authorization, "Bearer " + bearer);
  // One connection per request: a request never waits behind another on a shared connection,
  // and a server that dies shows up as refused connections for the requests after it.
  req.keep_alive(false);
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

}  // namespace

struct HttpClient::Impl {
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::vector<std::thread> threads;
};

HttpClient::HttpClient(int io_threads) : impl_(new Impl) {
  impl_->work.emplace(impl_->ioc.get_executor());
  for (int i = 0; i < std::max(1, io_threads); ++i)
    impl_->threads.emplace_back([this] { impl_->ioc.run(); });
}

HttpClient::~HttpClient() {
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
}

void HttpClient::post_stream(const Url& url, const std::string& path, std::string body,
                             double timeout_s, StreamHandlers handlers, const std::string& bearer) {
  auto req = make_request(url, "POST", path, std::move(body), true, bearer);
  std::make_shared<Exchange>(impl_->ioc, url, std::move(req), timeout_s, true, std::move(handlers))
      ->start();
}

HttpEnd HttpClient::request(const Url& url, const std::string& method, const std::string& path,
                            std::string body, double timeout_s, const std::string& bearer) {
  auto req = make_request(url, method, path, std::move(body), false, bearer);
  auto done = std::make_shared<std::promise<HttpEnd>>();
  auto result = done->get_future();
  StreamHandlers h;
  h.on_end = [done](const HttpEnd& end, Clock::time_point) { done->set_value(end); };
  std::make_shared<Exchange>(impl_->ioc, url, std::move(req), timeout_s, false, std::move(h))
      ->start();
  return result.get();
}

}  // namespace sandwich::bench
