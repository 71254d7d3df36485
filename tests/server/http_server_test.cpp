// HttpServer against clients that misbehave: slow ones (slowloris), too many from one address,
// a full pool, and ones that never read their answer. A toy handler, small limits, short
// deadlines: each test takes about a second.
#include "server/http_server.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "http_test_client.h"

namespace sandwich::test {
namespace {

using server::HttpRequest;
using server::HttpResponse;
using server::HttpServer;
using server::HttpServerOptions;
using server::Responder;

constexpr size_t kPiece = 16 << 10;

// An HttpServer on a free port with a handler that answers /hello and /health at once, streams
// 16 KiB pieces on /stream until the client is gone, and sends 32 MiB in one reply on /big.
class ToyServer {
 public:
  explicit ToyServer(HttpServerOptions o) {
    o.port = 0;
    server_ = std::make_unique<HttpServer>(
        o, [this](const HttpRequest& r, std::shared_ptr<Responder> out) { handle(r, out); });
    server_->start();
  }
  ~ToyServer() {
    server_->stop();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& t : streams_) t.join();
  }
  uint16_t port() const { return server_->port(); }
  server::HttpServerStats stats() const { return server_->stats(); }
  std::atomic<bool> disconnected{false};
  std::atomic<size_t> streamed{0};

 private:
  void handle(const HttpRequest& r, std::shared_ptr<Responder> out) {
    if (r.path == "/stream") {
      out->on_disconnect([this] { disconnected = true; });
      out->start_stream(200, "text/event-stream");
      std::lock_guard<std::mutex> lock(mu_);
      streams_.emplace_back([this, out] {
        // At most 256 MiB: a server that buffers without bound fails the test, not the machine.
        for (int i = 0; i < 16384 && !out->disconnected(); ++i) {
          out->send(std::string(kPiece, 'x'));
          streamed += kPiece;
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        out->end();
      });
      return;
    }
    HttpResponse res;
    res.content_type = "text/plain";
    res.body = r.path == "/big" ? std::string(32 << 20, 'x') : "hi";
    out->reply(std::move(res));
  }

  std::unique_ptr<HttpServer> server_;
  std::mutex mu_;
  std::vector<std::thread> streams_;
};

HttpServerOptions quick_options() {
  HttpServerOptions o;
  o.header_timeout_seconds = 0.3;
  o.body_timeout_seconds = 0.3;
  o.keep_alive_timeout_seconds = 0.3;
  o.write_timeout_seconds = 0.5;
  return o;
}

// Counts are made just after the connection is closed: wait for them a little.
template <class Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 600 && !pred(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return pred();
}

// Sends `bytes` one a time, every 50 ms, until the server closes; the seconds that took.
double seconds_until_closed_dribbling(RawConnection& c, const std::string& bytes) {
  const auto t0 = std::chrono::steady_clock::now();
  for (char b : bytes) {
    if (!c.send(std::string(1, b))) break;
    bool closed = false;
    c.read_until_close(50, &closed);
    if (closed) break;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(HttpServerSlowClients, AHeaderSentAByteAtATimeIsCutOffAtTheHeaderDeadline) {
  ToyServer s(quick_options());
  RawConnection c(s.port());
  const std::string head = "GET /hello HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(100, 'a');
  EXPECT_LT(seconds_until_closed_dribbling(c, head), 1.5);
  EXPECT_TRUE(eventually([&] { return s.stats().header_timeouts == 1; }));
}

TEST(HttpServerSlowClients, ABodySentAByteAtATimeIsCutOffAtTheBodyDeadline) {
  ToyServer s(quick_options());
  RawConnection c(s.port());
  ASSERT_TRUE(c.send("POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"));
  EXPECT_LT(seconds_until_closed_dribbling(c, std::string(100, 'b')), 1.5);
  EXPECT_TRUE(eventually([&] { return s.stats().body_timeouts == 1; }));
  EXPECT_EQ(s.stats().header_timeouts, 0u);
}

TEST(HttpServerSlowClients, AnIdleKeepAliveConnectionClosesAfterTheKeepAliveTimeout) {
  HttpServerOptions o = quick_options();
  o.header_timeout_seconds = 30;  // so that only the keep-alive timeout can close it
  ToyServer s(o);
  RawConnection c(s.port());
  ASSERT_TRUE(c.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"));
  bool closed = false;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string got = c.read_until_close(3000, &closed);
  EXPECT_NE(got.find("200 OK"), std::string::npos) << got;
  EXPECT_TRUE(closed);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.5);
}

// Connections that stay open (a long header deadline) against small limits.
HttpServerOptions pool_options(int max_connections, int per_client, int reserved) {
  HttpServerOptions o = quick_options();
  o.header_timeout_seconds = 30;
  o.max_connections = max_connections;
  o.max_connections_per_client = per_client;
  o.reserved_connections = reserved;
  return o;
}

TEST(HttpServerConnectionLimits, OneAddressGetsAtMostItsShareAndIsRefusedAtOnce) {
  HttpServerOptions o = quick_options();
  ToyServer s(pool_options(8, 2, 0));
  RawConnection a(s.port()), b(s.port());
  RawConnection c(s.port());  // the third from 127.0.0.1
  bool closed = false;
  const std::string got = c.read_until_close(1000, &closed);
  EXPECT_NE(got.find("503"), std::string::npos) << got;
  EXPECT_NE(got.find("from your address"), std::string::npos) << got;
  EXPECT_TRUE(eventually([&] { return s.stats().refused_per_client == 1; }));
  // The first two are still served.
  ASSERT_TRUE(a.send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  EXPECT_NE(a.read_until_close(1000).find("200 OK"), std::string::npos);
}

TEST(HttpServerConnectionLimits, AFullPoolStillAnswersTheReservedPaths) {
  HttpServerOptions o = pool_options(2, 16, 2);
  o.reserved_paths = {"/health"};
  ToyServer s(o);
  RawConnection a(s.port()), b(s.port());  // the pool is full of idle connections
  for (int i = 0; i < 3; ++i) {
    RawConnection h(s.port());
    ASSERT_TRUE(h.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    bool closed = false;
    const std::string got = h.read_until_close(1000, &closed);
    EXPECT_NE(got.find("200 OK"), std::string::npos) << got;
    EXPECT_TRUE(closed) << "a reserved slot is given back after one answer";
  }
  RawConnection other(s.port());
  ASSERT_TRUE(other.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string got = other.read_until_close(1000);
  EXPECT_NE(got.find("503"), std::string::npos) << got;
  EXPECT_TRUE(eventually([&] { return s.stats().refused_max_connections == 1; }));
}

TEST(HttpServerSlowReaders, AStreamToAClientThatNeverReadsIsAbortedAtTheSendBufferLimit) {
  HttpServerOptions o = quick_options();
  o.write_timeout_seconds = 30;  // so that only the buffer limit can end it
  o.max_send_buffer_bytes = 256 << 10;
  ToyServer s(o);
  RawConnection c(s.port(), 4096);
  ASSERT_TRUE(c.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  for (int i = 0; i < 300 && !s.disconnected; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(s.disconnected) << s.streamed << " bytes streamed";
  EXPECT_TRUE(eventually([&] { return s.stats().aborted_send_buffer_full == 1; }));
  // What the kernel holds plus the limit, not the handler's 256 MiB.
  EXPECT_LT(s.streamed, size_t{64} << 20);
}

TEST(HttpServerSlowReaders, AWriteThatMakesNoProgressIsAbortedAtTheWriteTimeout) {
  ToyServer s(quick_options());
  RawConnection c(s.port(), 4096);
  ASSERT_TRUE(c.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_TRUE(eventually([&] { return s.stats().aborted_write_timeout == 1; }));
  EXPECT_TRUE(eventually([&] { return s.stats().open_connections == 0; }));
}

// The access log's records: one per answered request, refusals the handler never saw included;
// a request that never fully arrived is not one.
TEST(HttpServerExchanges, EveryAnswerIsReportedOnce) {
  std::mutex mu;
  std::vector<server::HttpExchange> seen;
  HttpServerOptions o = quick_options();
  o.max_body_bytes = 1000;
  o.on_exchange = [&](const server::HttpExchange& e) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(e);
  };
  auto count = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size();
  };
  ToyServer s(o);
  {
    RawConnection c(s.port());
    ASSERT_TRUE(c.send("GET /hello?x=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    EXPECT_NE(c.read_until_close(1000).find("200 OK"), std::string::npos);
  }
  {
    RawConnection c(s.port());
    ASSERT_TRUE(c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" +
                       std::string(5000, 'b')));
    EXPECT_NE(c.read_until_close(1000).find("413"), std::string::npos);
  }
  {
    RawConnection c(s.port());
    ASSERT_TRUE(c.send("NOT HTTP AT ALL\r\n\r\n"));
    EXPECT_NE(c.read_until_close(1000).find("400"), std::string::npos);
  }
  {
    RawConnection c(s.port());  // its body never comes: no answer, no record
    ASSERT_TRUE(c.send("POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"));
    c.read_until_close(1000);
  }
  {
    RawConnection c(s.port(), 4096);  // a stream whose client leaves
    ASSERT_TRUE(c.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_TRUE(eventually([&] { return s.streamed > 0; }));
  }
  ASSERT_TRUE(eventually([&] { return count() >= 4u; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // nothing more comes
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 4u);
  auto expect = [&](size_t i, const char* method, const char* path, int status) {
    EXPECT_EQ(seen[i].method, method) << i;
    EXPECT_EQ(seen[i].path, path) << i;
    EXPECT_EQ(seen[i].status, status) << i;
    EXPECT_GE(seen[i].seconds, 0) << i;
    EXPECT_LT(seen[i].seconds, 5) << i;
  };
  expect(0, "GET", "/hello", 200);
  expect(1, "POST", "/v1/completions", 413);
  expect(2, "-", "-", 400);
  expect(3, "GET", "/stream", 200);
}

TEST(HttpServerSignals, TheSignalHandlerIsReleasedWithTheServer) {
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> watch = token;
  {
    HttpServerOptions o;
    o.port = 0;
    HttpServer server(o, [](const HttpRequest&, std::shared_ptr<Responder>) {});
    server.on_signal([token](int) {});
    token.reset();
    server.start();
  }
  EXPECT_TRUE(watch.expired()) << "the handler leaked (it referred to itself)";
}

}  // namespace
}  // namespace sandwich::test
