#include "fake_openai_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "asio_names.h"
#include "toy_vocab.h"

namespace sandwich::test {

struct FakeOpenAiServer::Impl {
  Options opt;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  uint16_t port = 0;
  std::thread accept_thread;

  mutable std::mutex mu;
  std::condition_variable cv;  // wakes scripted sleeps on kill
  bool stopping = false;
  std::vector<std::thread> conn_threads;
  std::set<int> open_fds;
  ScriptFn script = [](const json&, int) { return FakeScript{}; };
  std::vector<FakeRequest> received;
  int seq = 0, active = 0, max_active = 0, tokenize_calls = 0;
  ToyVocab vocab;  // grows as text is tokenized

  // ---- tokenizer -----------------------------------------------------------------------
  std::vector<int> encode(const std::string& text, bool bos) {
    std::lock_guard<std::mutex> lock(mu);
    return vocab.encode(text, bos);
  }
  std::string decode(const std::vector<int>& toks) {
    std::lock_guard<std::mutex> lock(mu);
    return vocab.decode(toks);
  }
  int count(const std::string& text) const {
    return 1 + static_cast<int>(vocab.split(text).size());
  }

  // ---- connections -----------------------------------------------------------------------
  bool sleep_for(double s) {  // false when killed meanwhile
    std::unique_lock<std::mutex> lock(mu);
    return !cv.wait_for(lock, std::chrono::duration<double>(s), [&] { return stopping; });
  }

  void accept_loop() {
    for (;;) {
      beast::error_code ec;
      tcp::socket sock(ioc);
      acceptor.accept(sock, ec);
      std::lock_guard<std::mutex> lock(mu);
      if (ec || stopping) {
        acceptor.close(ec);  // from now on connections are refused
        return;
      }
      open_fds.insert(sock.native_handle());
      conn_threads.emplace_back([this, s = std::move(sock)]() mutable { serve(std::move(s)); });
    }
  }

  void serve(tcp::socket sock) {
    const int fd = sock.native_handle();
    beast::flat_buffer buf;
    for (;;) {
      http::request<http::string_body> req;
      beast::error_code ec;
      http::read(sock, buf, req, ec);
      if (ec) break;
      const bool keep = route(sock, req);
      if (!keep || !req.keep_alive()) break;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      open_fds.erase(fd);
    }
    beast::error_code ignored;
    sock.shutdown(tcp::socket::shutdown_both, ignored);
    sock.close(ignored);
  }

  static void reply(tcp::socket& sock, int status, const json& body) {
    http::response<http::string_body> res{static_cast<http::status>(status), 11};
    res.set(http::field::content_type, "application/json");
    res.body() = body.dump();
    res.keep_alive(false);
    res.prepare_payload();
    beast::error_code ec;
    http::write(sock, res, ec);
  }

  static json error_body(const std::string& msg, int status) {
    return {{"error", {{"message", msg}, {"type", "invalid_request_error"}, {"code", status}}}};
  }

  // Returns whether the connection may serve another request.
  bool route(tcp::socket& sock, const http::request<http::string_body>& req) {
    const std::string path(req.target());
    const json body = req.body().empty() ? json::object() : json::parse(req.body(), nullptr, false);
    if (path == "/health") return reply(sock, 200, json::object()), true;
    if (path == "/v1/models" && req.method() == http::verb::get) {
      if (!opt.models_route) return reply(sock, 404, error_body("no route", 404)), true;
      return reply(sock, 200,
                   {{"object", "list"},
                    {"data", {{{"id", opt.model}, {"max_model_len", opt.max_model_len}}}}}),
             true;
    }
    if (path == "/tokenize" || path == "/detokenize")
      return tokenizer_route(sock, path, body), true;
    if (path == "/v1/completions" || path == "/v1/chat/completions")
      return generate(sock, path, body);
    reply(sock, 404, error_body("no route " + path, 404));
    return true;
  }

  void tokenizer_route(tcp::socket& sock, const std::string& path, const json& body) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++tokenize_calls;
    }
    if (opt.tokenizer == FakeTokenizer::None || body.is_discarded())
      return reply(sock, 404, error_body("no route", 404));
    const bool vllm = opt.tokenizer == FakeTokenizer::Vllm;
    if (path == "/tokenize") {
      if (vllm) {
        if (body.contains("messages")) {
          const std::string content = body["messages"][0]["content"].get<std::string>();
          const auto t = encode(content, true);
          return reply(
              sock, 200,
              {{"count", t.size() + static_cast<size_t>(opt.chat_template_tokens)}, {"tokens", t}});
        }
        if (!body.contains("prompt"))
          return reply(sock, 400, error_body("'prompt' is required", 400));
        const auto t =
            encode(body["prompt"].get<std::string>(), body.value("add_special_tokens", true));
        return reply(sock, 200, {{"count", t.size()}, {"tokens", t}});
      }
      // llama.cpp answers a body without "content" with an empty list.
      if (!body.contains("content")) return reply(sock, 200, {{"tokens", json::array()}});
      return reply(sock, 200,
                   {{"tokens", encode(body["content"].get<std::string>(),
                                      body.value("add_special", false))}});
    }
    if (!body.contains("tokens")) return reply(sock, 400, error_body("'tokens' is required", 400));
    const std::string text = decode(body["tokens"].get<std::vector<int>>());
    reply(sock, 200, vllm ? json{{"prompt", text}} : json{{"content", text}});
  }

  bool generate(tcp::socket& sock, const std::string& path, const json& body) {
    if (body.is_discarded()) return reply(sock, 400, error_body("bad JSON", 400)), false;
    const bool chat = path == "/v1/chat/completions";
    const std::string prompt =
        chat ? body["messages"][0]["content"].get<std::string>() : body.value("prompt", "");
    const int prompt_tokens = count(prompt) + (chat ? opt.chat_template_tokens : 0);
    FakeScript s;
    {
      std::lock_guard<std::mutex> lock(mu);
      received.push_back({path, body, std::chrono::steady_clock::now(), prompt_tokens});
      s = script(body, seq++);
      max_active = std::max(max_active, ++active);
    }
    stream(sock, s, body, chat, prompt_tokens);
    std::lock_guard<std::mutex> lock(mu);
    --active;
    return false;
  }

  void stream(tcp::socket& sock, const FakeScript& s, const json& body, bool chat,
              int prompt_tokens) {
    if (s.hang) {
      sleep_for(3600);
      return;
    }
    if (s.status != 200) return reply(sock, s.status, error_body("scripted failure", s.status));
    const int tokens = s.tokens >= 0 ? s.tokens : body.value("max_tokens", 16);
    const bool want_usage =
        body.contains("stream_options") && body["stream_options"].value("include_usage", false);
    const json usage = {{"prompt_tokens", prompt_tokens},
                        {"completion_tokens", tokens},
                        {"total_tokens", prompt_tokens + tokens}};
    if (s.not_sse) {
      if (!sleep_for(s.ttft_s)) return;
      return reply(sock, 200,
                   {{"choices", {{{"index", 0}, {"text", "x"}, {"finish_reason", "length"}}}},
                    {"usage", usage}});
    }
    http::response<http::empty_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "text/event-stream");
    res.keep_alive(false);
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    beast::error_code ec;
    http::write_header(sock, sr, ec);
    auto send = [&](const std::string& piece) {
      net::write(sock, http::make_chunk(net::buffer(piece)), ec);
      return !ec;
    };
    auto event = [&](const json& j) { return send("data: " + j.dump() + "\n\n"); };
    auto chunk = [&](const std::string& text, bool last) {
      json choice = {{"index", 0},
                     {"finish_reason", last && s.finish_reason ? json("length") : json(nullptr)}};
      if (chat)
        choice["delta"] = {{"content", text}};
      else
        choice["text"] = text;
      return event({{"id", "cmpl-fake"},
                    {"object", chat ? "chat.completion.chunk" : "text_completion"},
                    {"choices", {choice}}});
    };
    // Chat servers send the role first, at once; it carries no text and is no token.
    if (chat && !event({{"choices",
                         {{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}}}}}))
      return;
    if (!sleep_for(s.ttft_s)) return;
    if (s.error_event || s.garbage_event) {
      if (!chunk(" t", false)) return;
      if (s.error_event &&
          !event({{"error", {{"message", "scripted stream error"}, {"code", 500}}}}))
        return;
      if (s.garbage_event && !send("data: {not json\n\n")) return;
      send("data: [DONE]\n\n");
      net::write(sock, http::make_chunk_last(), ec);
      return;
    }
    const int per = std::max(1, s.tokens_per_chunk);
    const int chunks = (tokens + per - 1) / per;
    for (int c = 0; c < chunks; ++c) {
      if (c > 0) {
        const double gap = static_cast<size_t>(c - 1) < s.gaps_s.size()
                               ? s.gaps_s[static_cast<size_t>(c - 1)]
                               : s.itl_s;
        if (!sleep_for(gap)) return;
      }
      if (c == s.drop_after_chunks) return cut(sock);
      std::string text;
      for (int k = c * per; k < std::min(tokens, (c + 1) * per); ++k) text += " t";
      if (!chunk(text, c == chunks - 1)) return;
    }
    if (s.drop_after_chunks == chunks) return cut(sock);
    if (s.done_delay_s > 0 && !sleep_for(s.done_delay_s)) return;
    if (want_usage && s.usage && !event({{"choices", json::array()}, {"usage", usage}})) return;
    if (s.done && !send("data: [DONE]\n\n")) return;
    net::write(sock, http::make_chunk_last(), ec);
  }

  static void cut(tcp::socket& sock) {
    beast::error_code ignored;
    sock.shutdown(tcp::socket::shutdown_both, ignored);
  }
};

FakeOpenAiServer::FakeOpenAiServer(Options options) : impl_(new Impl) {
  impl_->opt = std::move(options);
  impl_->vocab = ToyVocab(impl_->opt.chars_per_token);
  auto& a = impl_->acceptor;
  const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
  a.open(ep.protocol());
  a.set_option(net::socket_base::reuse_address(true));
  a.bind(ep);
  a.listen(net::socket_base::max_listen_connections);
  impl_->port = a.local_endpoint().port();
  impl_->accept_thread = std::thread([this] { impl_->accept_loop(); });
}

FakeOpenAiServer::~FakeOpenAiServer() {
  kill();
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    threads.swap(impl_->conn_threads);
  }
  for (auto& t : threads) t.join();
}

uint16_t FakeOpenAiServer::port() const {
  return impl_->port;
}
std::string FakeOpenAiServer::url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->port);
}

void FakeOpenAiServer::set_script(ScriptFn fn) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->script = std::move(fn);
}

void FakeOpenAiServer::set_queueing_script(double service_s, const FakeScript& base) {
  using Clock = std::chrono::steady_clock;
  const auto service =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(service_s));
  // Scripts run under the server's lock, one at a time, in the order requests are read.
  set_script([service, base, busy_until = Clock::time_point{}](const json&, int) mutable {
    const Clock::time_point now = Clock::now();
    busy_until = std::max(now, busy_until) + service;
    FakeScript s = base;
    s.ttft_s = std::chrono::duration<double>(busy_until - now).count();
    return s;
  });
}

void FakeOpenAiServer::kill() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->stopping) return;
  impl_->stopping = true;
  impl_->cv.notify_all();
  // shutdown(2) on the descriptors wakes the threads blocked in accept/read on them; each
  // thread then closes its own socket.
  if (impl_->acceptor.is_open()) ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  for (int fd : impl_->open_fds) ::shutdown(fd, SHUT_RDWR);
}

std::vector<FakeRequest> FakeOpenAiServer::requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->received;
}

int FakeOpenAiServer::max_concurrent() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->max_active;
}

int FakeOpenAiServer::tokenize_calls() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->tokenize_calls;
}

int FakeOpenAiServer::count(const std::string& text) const {
  return impl_->count(text);
}

}  // namespace sandwich::test
