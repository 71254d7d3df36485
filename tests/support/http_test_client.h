#pragma once
// A blocking HTTP/1.1 client for the server tests: whole responses, SSE streams read chunk by
// chunk, raw bytes, and a process wrapper that starts sandwichd on a free port.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include "asio_names.h"
#include "test_data.h"

namespace sandwich::test {

struct HttpResult {
  int status = 0;
  std::string body;
  std::string content_type;
  std::map<std::string, std::string> headers;  // lower-case names
  json j() const { return json::parse(body); }
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

template <class Message>
HttpResult to_result(const Message& res) {
  HttpResult r{static_cast<int>(res.result_int()),
               res.body(),
               std::string(res[http::field::content_type]),
               {}};
  for (auto& f : res) {
    std::string name(f.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(f.value());
  }
  return r;
}

class Client {
 public:
  explicit Client(uint16_t port) : port_(port), stream_(ioc_) { connect(); }
  void connect() {
    tcp::resolver r(ioc_);
    stream_.connect(r.resolve("127.0.0.1", std::to_string(port_)));
  }

  HttpResult request(const std::string& method, const std::string& target,
                     const std::string& body = {},
                     const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    send(http::string_to_verb(method), target, body, headers);
    beast::flat_buffer buf;
    http::response_parser<http::string_body> p;
    p.body_limit(1 << 30);
    http::read(stream_, buf, p);
    return to_result(p.get());
  }
  HttpResult post(const std::string& target, const json& body,
                  const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    return request("POST", target, body.dump(), headers);
  }
  HttpResult get(const std::string& target) { return request("GET", target); }

  // Sends a streaming request and returns the SSE "data:" payloads in order. If stop_after is
  // set, closes the connection after that many events (a client that goes away).
  std::vector<std::string> stream(const std::string& target, const json& body,
                                  int* status = nullptr, int stop_after = -1) {
    send(http::verb::post, target, body.dump());
    beast::flat_buffer buf;
    http::response_parser<http::buffer_body> p;
    p.body_limit(1 << 30);
    http::read_header(stream_, buf, p);
    if (status) *status = static_cast<int>(p.get().result_int());
    std::string text;
    std::vector<std::string> events;
    char tmp[4096];
    while (!p.is_done()) {
      p.get().body().data = tmp;
      p.get().body().size = sizeof tmp;
      beast::error_code ec;
      http::read(stream_, buf, p, ec);
      if (ec == http::error::need_buffer) ec = {};
      // What came before an error (a server that died mid-stream) counts too.
      text.append(tmp, sizeof tmp - p.get().body().size);
      for (size_t at; (at = text.find("\n\n")) != std::string::npos;) {
        std::string ev = text.substr(0, at);
        text.erase(0, at + 2);
        if (ev.rfind("data: ", 0) == 0) events.push_back(ev.substr(6));
        if (stop_after >= 0 && static_cast<int>(events.size()) >= stop_after) {
          beast::error_code ignored;
          stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
          stream_.close();
          return events;
        }
      }
      if (ec) break;
    }
    return events;
  }

  void send_raw(const std::string& bytes) { net::write(stream_.socket(), net::buffer(bytes)); }
  HttpResult read_response() {
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(stream_, buf, res);
    return to_result(res);
  }
  // Half-closes the connection: the request is all sent, the answer may still come.
  void shutdown_send() { stream_.socket().shutdown(tcp::socket::shutdown_send); }
  // True when bytes (or the end of the connection) arrive within ms milliseconds, so that a
  // test of something the server should send fails instead of blocking.
  bool readable_within(int ms) {
    pollfd p{stream_.socket().native_handle(), POLLIN, 0};
    return ::poll(&p, 1, ms) > 0;
  }
  // Every byte until the server closes the connection; stops early after ms milliseconds of
  // silence.
  std::string read_until_close(int ms = 30000) {
    std::string out;
    char tmp[4096];
    while (readable_within(ms)) {
      beast::error_code ec;
      const size_t n = stream_.socket().read_some(net::buffer(tmp), ec);
      out.append(tmp, n);
      if (ec) break;
    }
    return out;
  }

 private:
  // Writes one request with a JSON content type.
  void send(http::verb method, const std::string& target, const std::string& body,
            const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    http::request<http::string_body> req(method, target, 11);
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    for (auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    http::write(stream_, req);
  }

  uint16_t port_;
  net::io_context ioc_;
  beast::tcp_stream stream_;
};

// A plain TCP connection for clients that misbehave: ones that send a byte at a time, or that
// never read (a small receive buffer, set before connecting, keeps the kernel from reading for
// them).
class RawConnection {
 public:
  explicit RawConnection(uint16_t port, int receive_buffer = 0) : socket_(ioc_) {
    socket_.open(tcp::v4());
    if (receive_buffer > 0)
      socket_.set_option(net::socket_base::receive_buffer_size(receive_buffer));
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  }
  // False once the server has closed the connection.
  bool send(const std::string& bytes) {
    beast::error_code ec;
    net::write(socket_, net::buffer(bytes), ec);
    return !ec;
  }
  // What arrives until the server closes, or until ms milliseconds pass; `closed` tells which.
  std::string read_until_close(int ms, bool* closed = nullptr) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    char tmp[4096];
    if (closed) *closed = false;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      pollfd p{socket_.native_handle(), POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return out;
      beast::error_code ec;
      const size_t n = socket_.read_some(net::buffer(tmp), ec);
      out.append(tmp, n);
      if (ec) {
        if (closed) *closed = true;
        return out;
      }
    }
  }

 private:
  net::io_context ioc_;
  tcp::socket socket_;
};

// sandwichd in a child process, on a port it picks; stopped with SIGTERM. A launcher (such as
// mpirun_prefix(2) of mpirun.h) starts it under another program: pid() is then the launcher's,
// and log() holds what every process it started writes to stderr.
class Daemon {
 public:
  explicit Daemon(const std::string& args, const std::string& launcher = "") {
    log_ = (dir_ / "sandwichd.log").string();
    const std::string cmd = "exec " + (launcher.empty() ? "" : launcher + " ") +
                            (bin_dir() / "sandwichd").string() + " --port 0 " + args + " 2>" + log_;
    pid_ = fork();
    if (pid_ == 0) {
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    static const std::regex port_re(R"(listening on http://[^:]+:(\d+))");
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string l = log();
      if (!port_ && std::regex_search(l, m, port_re))
        port_ = static_cast<uint16_t>(std::stoi(m[1]));
      if (l.find("sandwichd: ready") != std::string::npos && port_) return;
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        exited_ = true;
        exit_status_ = st;
        ADD_FAILURE() << "sandwichd exited during start-up: " << l;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "sandwichd did not become ready: " << log();
  }
  ~Daemon() {
    if (!exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  uint16_t port() const { return port_; }
  std::string log() const {
    std::ifstream in(log_);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  // SIGTERM without waiting (terminate() then waits).
  void begin_terminate() { kill(pid_, SIGTERM); }
  pid_t pid() const { return pid_; }
  // SIGTERM and wait; returns the exit code (or 128 + signal).
  int terminate(int timeout_s = 60) {
    kill(pid_, SIGTERM);
    return wait_exit(timeout_s);
  }
  // Waits for the daemon to exit; returns the exit code (or 128 + signal), -1 on the timeout.
  int wait_exit(int timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  TempDir dir_;
  std::string log_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  bool exited_ = false;
  int exit_status_ = 0;
};

// The arguments that make sandwichd serve stories260K as model "stories".
inline std::string stories_daemon_args() {
  const std::string dir = (data_dir() / "models/stories260K").string();
  return "--model " + dir + "/stories260K.bin --tokenizer " + dir +
         "/tok512.bin --served-model-name stories";
}

// A suite whose tests share one sandwichd serving stories260K, started once with the extra
// arguments Suite::daemon_args() gives (CRTP: each suite has its own daemon).
template <class Suite>
class StoriesDaemonSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(data_dir())) return;
    daemon_ = new Daemon(stories_daemon_args() + " " + Suite::daemon_args());
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  void SetUp() override {
    SANDWICH_REQUIRE_DATA();
    ASSERT_NE(daemon_->port(), 0);
  }
  static inline Daemon* daemon_ = nullptr;
};

}  // namespace sandwich::test
