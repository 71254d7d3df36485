#include "server/http_server.h"

#include <sched.h>

#include <utility>  // Boost 1.74 asio needs it under C++20 before its own headers

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "connection_limits.h"

namespace sandwich::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

HttpResponse json_error(int status, const std::string& message, const std::string& type,
                        const std::string& param, const std::string& code) {
  nlohmann::json e = {{"message", message},
                      {"type", type},
                      {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
                      {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}};
  HttpResponse r;
  r.status = status;
  // Messages may echo what the client sent (a path, a parse error); strict dump() would throw on
  // invalid UTF-8 and turn a 4xx into a 500.
  r.body =
      nlohmann::json({{"error", e}}).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

namespace {

class Session;

// Lives as long as someone may still answer; forwards to the session while it exists.
class SessionResponder : public Responder {
 public:
  explicit SessionResponder(std::weak_ptr<Session> s) : session_(std::move(s)) {}
  void reply(HttpResponse r) override;
  void start_stream(int status, const std::string& content_type) override;
  void send(std::string piece) override;
  void end() override;
  void on_disconnect(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!gone_) {
        on_gone_ = std::move(fn);
        return;
      }
    }
    fn();
  }
  bool disconnected() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return gone_;
  }
  // Session side.
  void mark_gone() {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (gone_ || complete_) return;
      gone_ = true;
      fn = std::move(on_gone_);
    }
    if (fn) fn();
  }
  void mark_complete() {
    std::lock_guard<std::mutex> lock(mu_);
    complete_ = true;
  }

 private:
  std::weak_ptr<Session> session_;
  mutable std::mutex mu_;
  bool gone_ = false, complete_ = false;
  std::function<void()> on_gone_;
};

// What the server counts for /metrics; shared by its sessions.
struct Counters {
  std::atomic<uint64_t> refused_max_connections{0}, refused_per_client{0}, header_timeouts{0},
      body_timeouts{0}, aborted_send_buffer_full{0}, aborted_write_timeout{0};
};

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

// The Access-Control-Allow-Origin a request from `origin` gets: "*" when any origin is allowed,
// the origin itself when it is listed, none (empty) otherwise.
std::string allowed_origin(const std::vector<std::string>& allowed, const std::string& origin) {
  if (origin.empty()) return {};
  for (const auto& a : allowed)
    if (a == "*") return "*";
  for (const auto& a : allowed)
    if (a == origin) return origin;
  return {};
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpServerOptions& opt, const Handler& handler,
          const HeaderCheck& check, ConnectionLimits::Ticket ticket, Counters& counters)
      : stream_(std::move(socket)),
        opt_(opt),
        handler_(handler),
        check_(check),
        ticket_(std::move(ticket)),
        counters_(counters) {}

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if (self->ticket_.kind() == ConnectionLimits::Kind::Normal ||
          self->ticket_.kind() == ConnectionLimits::Kind::Reserved)
        return self->read();
      // Refused at once, without reading: cheap.
      self->refuse_over_limit(self->ticket_.kind() == ConnectionLimits::Kind::TooManyFromClient);
    });
  }

  // Called through the responder, from any thread.
  void post_reply(HttpResponse r) {
    net::post(stream_.get_executor(), [self = shared_from_this(), r = std::move(r)]() mutable {
      if (self->state_ != State::Handling) return;
      self->write_full(std::move(r));
    });
  }
  void post_start_stream(int status, std::string ct) {
    net::post(stream_.get_executor(), [self = shared_from_this(), status, ct = std::move(ct)] {
      if (self->state_ != State::Handling) return;
      self->state_ = State::Streaming;
      self->answering(status);
      http::response<http::empty_body> res(static_cast<http::status>(status),
                                           self->response_version());
      res.set(http::field::server, "sandwichd");
      res.set(http::field::content_type, ct);
      res.set(http::field::cache_control, "no-cache");
      self->set_cors(res);
      // HTTP/1.0 has no chunked encoding: the body runs until the connection closes.
      self->chunked_ = self->version_ >= 11;
      if (!self->chunked_) self->keep_alive_ = false;
      res.keep_alive(self->keep_alive_);
      res.chunked(self->chunked_);
      std::ostringstream head;
      head << res.base();
      self->enqueue(head.str());
      self->flush();
    });
  }
  void post_send(std::string piece) {
    net::post(stream_.get_executor(), [self = shared_from_this(), p = std::move(piece)]() mutable {
      if (self->state_ != State::Streaming || p.empty()) return;
      // A client that does not read: the stream would pile up here.
      if (self->out_bytes_ > 0 && self->out_bytes_ + p.size() > self->opt_.max_send_buffer_bytes)
        return self->abort_slow_reader(self->counters_.aborted_send_buffer_full);
      if (self->chunked_) {
        char size[24];
        std::snprintf(size, sizeof size, "%zx\r\n", p.size());
        self->enqueue(size + std::move(p) + "\r\n");
      } else {
        self->enqueue(std::move(p));
      }
      self->flush();
    });
  }
  void post_end() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->state_ != State::Streaming) return;
      if (self->responder_) self->responder_->mark_complete();
      self->state_ = State::Closed;
      if (self->chunked_) self->enqueue("0\r\n\r\n");  // without it, the close ends the body
      self->respond_after_flush_ = true;
      self->flush();
    });
  }

 private:
  enum class State { Reading, Handling, Streaming, Closed };

  unsigned response_version() const { return version_ == 10 ? 10 : 11; }
  bool reserved() const { return ticket_.kind() == ConnectionLimits::Kind::Reserved; }

  void refuse_over_limit(bool per_client) {
    ++(per_client ? counters_.refused_per_client : counters_.refused_max_connections);
    keep_alive_ = false;
    state_ = State::Handling;
    write_full(json_error(503,
                          per_client ? "too many open connections from your address; retry later"
                                     : "too many open connections; retry later",
                          "server_error"));
  }

  // A later request on a kept-alive connection: the idle wait for its first byte has its own
  // (short) deadline, the header's starts with that byte.
  void read_next() {
    state_ = State::Reading;
    if (buffer_.size() > 0) return read();
    stream_.expires_after(seconds(opt_.keep_alive_timeout_seconds));
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) return self->close();
                              self->buffer_.commit(n);
                              self->read();
                            });
  }

  // The header first, so that a request can be refused (and 'Expect: 100-continue' answered)
  // before its body is read.
  void read() {
    state_ = State::Reading;
    reading_body_ = false;
    parser_.emplace();
    parser_->body_limit(opt_.max_body_bytes);
    parser_->header_limit(64 * 1024);
    // A reserved slot is for a health check, which sends its request at once.
    const double limit =
        reserved() ? std::min(opt_.header_timeout_seconds, 2.0) : opt_.header_timeout_seconds;
    stream_.expires_after(seconds(limit));
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  // Answers a failed read; false when there was no error.
  bool read_failed(beast::error_code ec) {
    if (!ec) return false;
    if (ec == beast::error::timeout)
      ++(reading_body_ ? counters_.body_timeouts : counters_.header_timeouts);
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec == net::error::eof) {
      close();
      return true;
    }
    keep_alive_ = false;
    state_ = State::Handling;
    if (ec == http::error::body_limit)
      write_full(json_error(
          413, "request body larger than " + std::to_string(opt_.max_body_bytes) + " bytes",
          "invalid_request_error"));
    else
      write_full(
          json_error(400, "malformed HTTP request: " + ec.message(), "invalid_request_error"));
    return true;
  }

  void on_header(beast::error_code ec) {
    if (read_failed(ec)) return;
    auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    version_ = req.version();
    request_ = HttpRequest{};
    request_.method = std::string(req.method_string());
    request_.target = std::string(req.target());
    request_.path = request_.target.substr(0, request_.target.find('?'));
    exchange_ = {request_.method, request_.path, 0, 0};
    exchange_start_ = std::chrono::steady_clock::now();
    for (auto& f : req) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto [it, first] = request_.headers.try_emplace(name);
      if (!first) request_.repeated_headers.push_back(name);
      it->second = std::string(f.value());
    }
    cors_origin_ = allowed_origin(opt_.allowed_origins, request_.header("origin"));
    if (reserved()) {
      const auto& paths = opt_.reserved_paths;
      if (request_.method != "GET" ||
          std::find(paths.begin(), paths.end(), request_.path) == paths.end()) {
        return refuse_over_limit(ticket_.client_at_limit());
      }
      keep_alive_ = false;  // give the slot back at once
    }
    std::string expect = request_.header("expect");
    for (auto& c : expect) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool body_waits = !expect.empty() && version_ >= 11 && !parser_->is_done();
    if (body_waits) {
      if (expect != "100-continue") {
        keep_alive_ = false;
        state_ = State::Handling;
        return write_full(json_error(
            417,
            "unsupported Expect header '" + request_.header("expect") + "' (only 100-continue is)",
            "invalid_request_error"));
      }
      // Only a client that waits for 100 Continue is refused on the header: one that sends its
      // body anyway gets its answer after the body, on a connection that stays open.
      std::optional<HttpResponse> refusal;
      try {
        if (check_) refusal = check_(request_);
      } catch (const std::exception& e) {
        refusal = json_error(500, std::string("internal error: ") + e.what(), "server_error");
      }
      if (refusal) {
        // Whether the client sends the body after all is up to it; closing settles that.
        keep_alive_ = false;
        state_ = State::Handling;
        return write_full(std::move(*refusal));
      }
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      stream_.expires_after(seconds(opt_.write_timeout_seconds));
      net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                       [self = shared_from_this()](beast::error_code ec, size_t) {
                         if (ec) return self->close();
                         self->read_body();
                       });
      return;
    }
    read_body();
  }

  void read_body() {
    if (parser_->is_done()) return on_read({});
    reading_body_ = true;
    stream_.expires_after(seconds(opt_.body_timeout_seconds));
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (read_failed(ec)) return;
    HttpRequest r = std::move(request_);
    r.body = std::move(parser_->get().body());
    state_ = State::Handling;
    // A CORS preflight from an allowed origin is answered here, before any API key is asked for
    // (browsers send none with it).
    if (r.method == "OPTIONS" && !cors_origin_.empty() &&
        !r.header("access-control-request-method").empty()) {
      HttpResponse pre{204, "text/plain", {}, {}};
      pre.headers = {
          {"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
          {"Access-Control-Allow-Headers", r.header("access-control-request-headers").empty()
                                               ? "Authorization, Content-Type"
                                               : r.header("access-control-request-headers")},
          {"Access-Control-Max-Age", "600"}};
      return write_full(std::move(pre));
    }
    responder_ = std::make_shared<SessionResponder>(weak_from_this());
    // The responder only has a weak reference, and the watcher stops at a half-close: something
    // must keep the session alive until the answer is out.
    hold_ = shared_from_this();
    stream_.expires_never();
    watch();
    try {
      handler_(r, responder_);
    } catch (const std::exception& e) {
      write_full(json_error(500, std::string("internal error: ") + e.what(), "server_error"));
    }
  }

  // While a request runs, a 1-byte read notices a client that resets the connection. EOF is a
  // half-close (shutdown(SHUT_WR) after the request), not a hang-up: the client may still be
  // reading, so the answer goes on; a client that closed completely makes a later write fail.
  void watch() {
    watching_ = true;
    stream_.socket().async_read_some(
        net::buffer(watch_byte_, 1), [self = shared_from_this()](beast::error_code ec, size_t n) {
          self->watching_ = false;
          if (self->draining_) return self->drain();
          if (!ec && n > 0) {
            // A pipelined request: keep its first byte for the next read.
            auto b = self->buffer_.prepare(1);
            std::memcpy(b.data(), self->watch_byte_, 1);
            self->buffer_.commit(1);
            if (self->state_ == State::Handling || self->state_ == State::Streaming) return;
          } else if (ec == net::error::eof) {
            self->keep_alive_ = false;  // nothing more can come on this connection
          } else if (ec && ec != net::error::operation_aborted) {
            self->fail();
            return;
          }
          if (self->state_ == State::Reading && self->read_after_watch_) {
            self->read_after_watch_ = false;
            self->read_next();
          }
        });
  }

  template <class Response>
  void set_cors(Response& res) const {
    if (cors_origin_.empty()) return;
    res.set(http::field::access_control_allow_origin, cors_origin_);
    if (cors_origin_ != "*") res.set(http::field::vary, "Origin");
  }

  void write_full(HttpResponse r) {
    if (responder_) responder_->mark_complete();
    answering(r.status);
    http::response<http::string_body> res(static_cast<http::status>(r.status), response_version());
    res.set(http::field::server, "sandwichd");
    res.set(http::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res.set(k, v);
    set_cors(res);
    res.keep_alive(keep_alive_);
    res.content_length(r.body.size());
    std::ostringstream head;
    head << res.base();
    state_ = State::Closed;  // no more answers for this request
    enqueue(std::move(head).str());
    if (!r.body.empty()) enqueue(std::move(r.body));
    respond_after_flush_ = true;
    flush();
  }

  void enqueue(std::string bytes) {
    out_bytes_ += bytes.size();
    out_.push_back(std::move(bytes));
  }

  // Writes what is queued, one write at a time, each with the write deadline: a client that
  // reads slowly but steadily is fine, one that stops reading is cut off.
  void flush() {
    if (writing_) return;
    if (out_.empty()) {
      if (!std::exchange(respond_after_flush_, false)) return;
      return after_response();
    }
    writing_ = true;
    const std::string& front = out_.front();
    stream_.expires_after(seconds(opt_.write_timeout_seconds));
    stream_.async_write_some(
        net::buffer(front.data() + out_offset_, front.size() - out_offset_),
        [self = shared_from_this()](beast::error_code ec, size_t n) {
          self->writing_ = false;
          if (ec == beast::error::timeout)
            return self->abort_slow_reader(self->counters_.aborted_write_timeout);
          if (ec) return self->fail();
          if (!self->stream_.socket().is_open()) return self->drop_output();  // closed meanwhile
          self->stream_.expires_never();
          self->out_bytes_ -= n;
          self->out_offset_ += n;
          if (self->out_offset_ == self->out_.front().size()) {
            self->out_.pop_front();
            self->out_offset_ = 0;
          }
          self->flush();
        });
  }

  // The client does not take its answer: the request ends as if it had disconnected (the
  // handler hears of it and stops), and what was queued for it is dropped.
  void abort_slow_reader(std::atomic<uint64_t>& counter) {
    ++counter;
    fail();
  }

  void after_response() {
    exchanged();
    auto self = std::move(hold_);
    responder_.reset();
    if (!keep_alive_) return close_gracefully();
    state_ = State::Reading;
    if (watching_) {
      read_after_watch_ = true;
      beast::error_code ignored;
      stream_.socket().cancel(ignored);
      return;
    }
    read_next();
  }

  // Closing a socket with unread input resets the connection, and a reset can destroy the answer
  // before the client reads it (a refused body still on its way, say). So: send FIN, then read
  // and drop whatever still comes until the client closes, for a short while.
  void close_gracefully() {
    state_ = State::Closed;
    // A reserved slot is free as soon as its answer is out (before the client sees the end).
    if (reserved()) ticket_ = {};
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(2));
    draining_ = true;
    if (watching_) {
      stream_.socket().cancel(ignored);  // the watcher's handler goes on draining
      return;
    }
    drain();
  }

  void drain() {
    stream_.async_read_some(net::buffer(drain_buf_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->close();
                              self->drain();
                            });
  }

  void fail() {
    if (responder_) responder_->mark_gone();
    close();
  }

  // The access log's record: opened by the request's head (or by an answer without one), its
  // status set by the answer, reported once the answer is out or the client is gone.
  void answering(int status) {
    if (!exchange_) {
      exchange_ = {"-", "-", 0, 0};
      exchange_start_ = std::chrono::steady_clock::now();
      // Refused while its head was read (a Content-Length over the limit) after the request
      // line: it has a name.
      if (parser_ && !parser_->get().target().empty()) {
        const auto& req = parser_->get();
        const std::string target(req.target());
        exchange_->method = std::string(req.method_string());
        exchange_->path = target.substr(0, target.find('?'));
      }
    }
    exchange_->status = status;
  }
  void exchanged() {
    if (!exchange_) return;
    HttpExchange e = std::move(*exchange_);
    exchange_.reset();
    if (e.status == 0) e.status = 499;
    e.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - exchange_start_).count();
    if (opt_.on_exchange) opt_.on_exchange(e);
  }

  // An in-flight write still reads the front buffer: its handler drops the output instead.
  void drop_output() {
    if (writing_) return;
    out_.clear();
    out_bytes_ = out_offset_ = 0;
  }

  void close() {
    auto self = std::move(hold_);
    drop_output();
    // A request that was being answered ends here; one whose head or body never fully came
    // was never a request to log.
    if (state_ == State::Handling || state_ == State::Streaming ||
        (exchange_ && exchange_->status != 0))
      exchanged();
    exchange_.reset();
    if (state_ == State::Closed && !stream_.socket().is_open()) return;
    state_ = State::Closed;
    if (responder_) responder_->mark_gone();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  const HttpServerOptions& opt_;
  const Handler& handler_;
  const HeaderCheck& check_;
  ConnectionLimits::Ticket ticket_;
  Counters& counters_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest request_;                   // the header of the request being read
  std::optional<HttpExchange> exchange_;  // the request being answered, for the access log
  std::chrono::steady_clock::time_point exchange_start_;
  std::string cors_origin_;  // Access-Control-Allow-Origin for this request; empty: none
  std::shared_ptr<SessionResponder> responder_;
  std::shared_ptr<Session> hold_;  // itself, while a request is being answered
  State state_ = State::Reading;
  unsigned version_ = 11;
  bool keep_alive_ = true, writing_ = false, watching_ = false, read_after_watch_ = false;
  bool chunked_ = true, draining_ = false, reading_body_ = false;
  // Once the queue is written, the answer is complete.
  bool respond_after_flush_ = false;
  char watch_byte_[1];
  std::array<char, 4096> drain_buf_;
  // Bytes to send, in order; the first is written from out_offset_ on. out_bytes_ counts
  // what is not yet written.
  std::deque<std::string> out_;
  size_t out_offset_ = 0, out_bytes_ = 0;
};

void SessionResponder::reply(HttpResponse r) {
  if (auto s = session_.lock()) s->post_reply(std::move(r));
}
void SessionResponder::start_stream(int status, const std::string& ct) {
  if (auto s = session_.lock()) s->post_start_stream(status, ct);
}
void SessionResponder::send(std::string piece) {
  if (auto s = session_.lock()) s->post_send(std::move(piece));
}
void SessionResponder::end() {
  if (auto s = session_.lock()) s->post_end();
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(const HttpServerOptions& o)
      : opt(o),
        limits(o.max_connections,
               o.max_connections_per_client > 0 ? o.max_connections_per_client
                                                : std::max(1, o.max_connections / 2),
               o.reserved_connections) {}

  HttpServerOptions opt;
  Handler handler;
  HeaderCheck check;
  // Before the io_context: sessions still queued in it are destroyed with it and give their
  // places back.
  ConnectionLimits limits;
  Counters counters;
  std::function<void(int)> signal_handler;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  net::signal_set signals{ioc, SIGINT, SIGTERM};
  std::vector<std::thread> threads;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        beast::error_code ignored;
        const auto peer = socket.remote_endpoint(ignored);
        auto ticket = limits.admit(ignored ? std::string() : peer.address().to_string());
        // A response goes out as two writes (head, then body): with Nagle the second waits for
        // the client's delayed ACK of the first, 40 ms on Linux, on every small answer.
        socket.set_option(tcp::no_delay(true), ignored);
        if (ticket.kind() == ConnectionLimits::Kind::Dropped)
          socket.close(ignored);
        else
          std::make_shared<Session>(std::move(socket), opt, handler, check, std::move(ticket),
                                    counters)
              ->start();
      }
      accept();
    });
  }

  // Re-armed after each signal; the handler lives here, so nothing refers to itself.
  void wait_for_signal() {
    signals.async_wait([this](beast::error_code ec, int sig) {
      if (ec) return;
      if (signal_handler) signal_handler(sig);
      wait_for_signal();
    });
  }
};

HttpServer::HttpServer(const HttpServerOptions& options, Handler handler, HeaderCheck check)
    : impl_(new Impl(options)) {
  impl_->handler = std::move(handler);
  impl_->check = std::move(check);
  beast::error_code ec;
  auto addr = net::ip::make_address(options.host, ec);
  if (ec) throw std::runtime_error("invalid --host '" + options.host + "': " + ec.message());
  tcp::endpoint ep(addr, options.port);
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + options.host + ":" +
                             std::to_string(options.port) + ": " + ec.message());
}

HttpServer::~HttpServer() {
  stop();
}

uint16_t HttpServer::port() const {
  return impl_->acceptor.local_endpoint().port();
}
int HttpServer::open_connections() const {
  return impl_->limits.open();
}

HttpServerStats HttpServer::stats() const {
  const Counters& c = impl_->counters;
  return {impl_->limits.open(),   c.refused_max_connections, c.refused_per_client,
          c.header_timeouts,      c.body_timeouts,           c.aborted_send_buffer_full,
          c.aborted_write_timeout};
}

void HttpServer::start() {
  impl_->work.emplace(impl_->ioc.get_executor());
  impl_->accept();
  const int n = std::max(1, impl_->opt.io_threads);
  for (int i = 0; i < n; ++i)
    impl_->threads.emplace_back([this, i] {
      if (!impl_->opt.io_cpus.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(impl_->opt.io_cpus[i % impl_->opt.io_cpus.size()], &set);
        sched_setaffinity(0, sizeof set, &set);
      }
      impl_->ioc.run();
    });
}

void HttpServer::post(std::function<void()> fn) {
  net::post(impl_->ioc, std::move(fn));
}

void HttpServer::on_signal(std::function<void(int)> fn) {
  net::post(impl_->ioc, [this, fn = std::move(fn)]() mutable {
    const bool waiting = static_cast<bool>(impl_->signal_handler);
    impl_->signal_handler = std::move(fn);
    if (!waiting) impl_->wait_for_signal();
  });
}

void HttpServer::stop_accepting() {
  net::post(impl_->ioc, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
}

void HttpServer::stop() {
  if (impl_->threads.empty()) return;
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
  impl_->threads.clear();
}

}  // namespace sandwich::server
