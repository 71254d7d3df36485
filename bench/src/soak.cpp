#include "bench/soak.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench/prompts.h"
#include "bench/server_api.h"
#include "malformed_requests.h"
#include "process_watch.h"
#include "raw_connection.h"

namespace sandwich::bench {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// The value of the first sample of `name` in the server's Prometheus text, whatever its labels
// ("name value" or "name{model_name=\"m\"} value"); NaN if missing.
double metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0 || line.size() <= name.size()) continue;
    if (line[name.size()] == ' ') return std::strtod(line.c_str() + name.size() + 1, nullptr);
    const size_t close = line.rfind("} ");
    if (line[name.size()] == '{' && close != std::string::npos)
      return std::strtod(line.c_str() + close + 2, nullptr);
  }
  return std::nan("");
}

struct GreedyReference {
  std::string body;  // the request
  std::string text;
  json logprobs;
};

// An answer the load got: 5xx ones are judged after the run, against the kill windows.
struct ServerError {
  std::string kind;
  int status;
  double start_s, end_s;
  std::string body;
};

class Soak {
 public:
  Soak(const SoakOptions& o, std::ostream& log) : o_(o), log_(log), client_(2) {}

  SoakReport run() {
    t0_ = Clock::now();
    wait_healthy(120);
    if (o_.model.empty()) {
      o_.model = probe_server(client_, o_.url, o_.bearer, 10).model;
      if (o_.model.empty()) throw std::runtime_error("the server lists no model in /v1/models");
    }
    malformed_ = malformed_requests(o_.model);
    solo_greedy_runs();
    r_.rss_launch = rss();
    log_ << "soak: warm-up " << o_.warmup_seconds << " s\n";
    load_phase(o_.warmup_seconds, false);
    wait_idle();
    if (server_died_) return r_;
    r_.rss_start = r_.rss_peak = rss();
    r_.vm_rss_start = vm_rss();
    log_ << "soak: " << o_.seconds << " s of mixed load, " << o_.concurrency << " clients\n";
    const double start = now_s();
    load_phase(o_.seconds, o_.kill_rank_every > 0);
    r_.seconds = now_s() - start;
    wait_idle();
    if (server_died_) return r_;
    std::this_thread::sleep_for(std::chrono::seconds(2));
    r_.rss_end = rss();
    r_.vm_rss_end = vm_rss();
    r_.rss_peak = std::max(r_.rss_peak, r_.rss_end);
    const HttpEnd m = client_.request(o_.url, "GET", "/metrics", "", 10, o_.bearer);
    r_.kv_blocks_end = metric(m.body, "sandwich:kv_cache_blocks_used");
    judge();
    return r_;
  }

 private:
  double now_s() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  // Private memory (RssAnon): what a leak grows. VmRSS also counts pages of the shared weights
  // and all-reduce regions as the server touches them (a re-formed rank group clears the latter
  // once), which is bounded and no leak; it is reported beside.
  uint64_t rss() const { return o_.server_pid > 0 ? status_bytes(o_.server_pid, "RssAnon") : 0; }
  uint64_t vm_rss() const { return o_.server_pid > 0 ? status_bytes(o_.server_pid, "VmRSS") : 0; }
  // A crash ends the run at once: there is nothing left to measure.
  void check_alive() {
    if (o_.server_pid <= 0 || alive(o_.server_pid) || server_died_.exchange(true)) return;
    std::lock_guard lock(mu_);
    r_.failures.push_back("the server process " + std::to_string(o_.server_pid) + " died at " +
                          std::to_string(now_s()) + " s");
    log_ << "soak: the server process died\n";
  }

  void count(const std::string& kind, const std::string& outcome) {
    std::lock_guard lock(mu_);
    ++r_.outcomes[kind][outcome];
  }
  void sample(const std::string& what) {
    std::lock_guard lock(mu_);
    if (r_.samples.size() < 20 &&
        std::find(r_.samples.begin(), r_.samples.end(), what) == r_.samples.end())
      r_.samples.push_back(what);
  }

  // Sorts an answer; 5xx ones wait for the judgement against the kill windows.
  void outcome(const std::string& kind, int status, const std::string& error, double start,
               const std::string& body) {
    if (!error.empty() || status >= 500)  // no hammering of a server that is down or healing
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!error.empty()) {
      count(kind, "transport_" + error);
      std::lock_guard lock(mu_);
      transport_errors_.push_back({kind, 0, start, now_s(), error});
    } else if (status >= 500) {
      std::lock_guard lock(mu_);
      server_errors_.push_back({kind, status, start, now_s(), body.substr(0, 300)});
    } else if (status == 429) {
      count(kind, "429");
    } else if (status >= 400) {
      count(kind, "4xx");
      if (kind != "malformed")
        sample(kind + ": " + std::to_string(status) + " " + body.substr(0, 300));
    } else {
      count(kind, "ok");
    }
  }

  void wait_healthy(double limit_s) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(limit_s);
    while (Clock::now() < deadline) {
      if (client_.request(o_.url, "GET", "/health", "", 5, o_.bearer).status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw std::runtime_error("the server at " + o_.url.str() + " is not healthy after " +
                             std::to_string(static_cast<int>(limit_s)) + " s");
  }

  // Waits until nothing runs or waits (the hung-up and unread streams are aborted by then).
  void wait_idle() {
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (Clock::now() < deadline) {
      check_alive();
      if (server_died_) return;
      const HttpEnd m = client_.request(o_.url, "GET", "/metrics", "", 10, o_.bearer);
      if (m.status == 200 && metric(m.body, "sandwich:num_requests_running") == 0 &&
          metric(m.body, "sandwich:num_requests_waiting") == 0)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    r_.failures.push_back("requests still running 120 s after the load stopped");
  }

  std::string greedy_body(int i) const {
    return json{{"model", o_.model},
                {"prompt", corpus_text(8 + 6 * static_cast<size_t>(i), o_.seed + i)},
                {"max_tokens", o_.max_tokens},
                {"temperature", 0},
                {"logprobs", 1}}
        .dump();
  }

  void solo_greedy_runs() {
    for (int i = 0; i < o_.greedy_prompts; ++i) {
      GreedyReference ref{greedy_body(i), {}, {}};
      const HttpEnd e = client_.request(o_.url, "POST", "/v1/completions", ref.body,
                                        o_.request_timeout, o_.bearer);
      if (e.status != 200)
        throw std::runtime_error("solo greedy run " + std::to_string(i) + " got " +
                                 std::to_string(e.status) + ": " + e.body.substr(0, 300));
      const json j = json::parse(e.body);
      ref.text = j["choices"][0].value("text", "");
      ref.logprobs = j["choices"][0].value("logprobs", json());
      greedy_.push_back(std::move(ref));
    }
  }

  void greedy(std::mt19937_64& rng) {
    const size_t i = rng() % greedy_.size();
    const double start = now_s();
    const HttpEnd e = client_.request(o_.url, "POST", "/v1/completions", greedy_[i].body,
                                      o_.request_timeout, o_.bearer);
    outcome("greedy", e.status, e.error_kind, start, e.body);
    if (!e.error_kind.empty() || e.status != 200) return;
    const json j = json::parse(e.body, nullptr, false);
    if (j.is_discarded()) return count("greedy", "unparsable");
    const json& c = j["choices"][0];
    std::lock_guard lock(mu_);
    if (c.value("text", "") != greedy_[i].text) {
      ++r_.greedy_text_mismatches;
      if (r_.samples.size() < 20)
        r_.samples.push_back("greedy " + std::to_string(i) + " differs from its solo run: '" +
                             c.value("text", "") + "' vs '" + greedy_[i].text + "'");
    } else if (c.value("logprobs", json()) != greedy_[i].logprobs) {
      ++r_.greedy_logprob_mismatches;
    }
  }

  void stream(std::mt19937_64& rng) {
    const bool chat = rng() % 2;
    json body = {{"model", o_.model},
                 {"max_tokens", 1 + static_cast<int>(rng() % o_.max_tokens)},
                 {"temperature", 0.8},
                 {"stream", true},
                 {"n", 1 + static_cast<int>(rng() % 2)},
                 {"seed", static_cast<int>(rng() % 1000)}};
    const std::string text = corpus_text(4 + rng() % 40, rng());
    if (chat)
      body["messages"] = {{{"role", "user"}, {"content", text}}};
    else
      body["prompt"] = text;
    struct State {
      std::string tail;
      bool done = false;
    };
    auto st = std::make_shared<State>();
    std::promise<HttpEnd> ended;
    auto fut = ended.get_future();
    HttpClient::StreamHandlers h;
    h.on_body = [st](std::string_view b, Clock::time_point) {
      st->tail.append(b);
      if (st->tail.find("data: [DONE]") != std::string::npos) st->done = true;
      if (st->tail.size() > 64) st->tail.erase(0, st->tail.size() - 64);
    };
    h.on_end = [&ended](const HttpEnd& e, Clock::time_point) { ended.set_value(e); };
    const double start = now_s();
    client_.post_stream(o_.url, chat ? "/v1/chat/completions" : "/v1/completions", body.dump(),
                        o_.request_timeout, std::move(h), o_.bearer);
    const HttpEnd e = fut.get();
    if (e.error_kind.empty() && e.status == 200 && !st->done) return count("stream", "no_done");
    outcome("stream", e.status, e.error_kind, start, e.body);
  }

  std::string long_stream_body(std::mt19937_64& rng) const {
    return json{{"model", o_.model},
                {"prompt", corpus_text(20, rng())},
                {"max_tokens", 4 * o_.max_tokens},
                {"ignore_eos", true},
                {"n", 4},
                {"logprobs", 5},
                {"stream", true}}
        .dump();
  }

  void hang_up(std::mt19937_64& rng) {
    const std::string req =
        post_request_text(o_.url, "/v1/completions", long_stream_body(rng), o_.bearer);
    const double start = now_s();
    const int status = hang_up_after(o_.url, req, 200 + rng() % 4000, o_.request_timeout);
    outcome("hang_up", status, status ? "" : "no_answer", start, "");
  }

  void unread(std::mt19937_64& rng) {
    const std::string req =
        post_request_text(o_.url, "/v1/completions", long_stream_body(rng), o_.bearer);
    const bool sent = never_read(o_.url, req, 2.0 + static_cast<double>(rng() % 80) / 10);
    count("never_read", sent ? "sent" : "transport_connect");
  }

  void malformed(std::mt19937_64& rng) {
    const MalformedRequest& m = malformed_[rng() % malformed_.size()];
    const double start = now_s();
    const HttpEnd e =
        client_.request(o_.url, m.method, m.path, m.body, o_.request_timeout, o_.bearer);
    if (e.error_kind.empty() && e.status < 400) {
      count("malformed", "accepted");
      sample("malformed request accepted (" + std::to_string(e.status) + "): " + m.name);
      return;
    }
    outcome("malformed", e.status, e.error_kind, start, m.name + ": " + e.body);
  }

  void client_loop(uint64_t seed, Clock::time_point end, std::atomic<int>& unread_now) {
    std::mt19937_64 rng(seed);
    while (Clock::now() < end && !server_died_) {
      const unsigned pick = rng() % 100;
      if (pick < 30) {
        stream(rng);
      } else if (pick < 55) {
        greedy(rng);
      } else if (pick < 70) {
        hang_up(rng);
      } else if (pick < 77 && unread_now < std::max(1, o_.concurrency / 4)) {
        ++unread_now;
        unread(rng);
        --unread_now;
      } else {
        malformed(rng);
      }
    }
  }

  void kill_a_rank(std::mt19937_64& rng) {
    std::vector<pid_t> ranks = descendants(o_.server_pid);
    std::vector<pid_t> named;
    for (pid_t p : ranks)
      if (process_name(p).find("rank") != std::string::npos) named.push_back(p);
    if (!named.empty()) ranks = named;
    if (ranks.empty()) {
      std::lock_guard lock(mu_);
      r_.failures.push_back("--kill-rank-every given, but the server has no rank processes");
      return;
    }
    RankKill k;
    k.pid = ranks[rng() % ranks.size()];
    k.name = process_name(k.pid);
    k.at_s = now_s();
    if (::kill(k.pid, SIGKILL) != 0) return;
    log_ << "soak: killed rank " << k.pid << " (" << k.name << ") at " << k.at_s << " s\n";
    // A 200 before the server has noticed the death is no recovery: it counts once a 503 was
    // seen, or after 200 ms (the server's detection is immediate; the group re-forms in ms).
    bool seen_down = false;
    const auto deadline = Clock::now() + std::chrono::duration<double>(o_.recovery_limit);
    while (Clock::now() < deadline) {
      const HttpEnd h = client_.request(o_.url, "GET", "/health", "", 5, o_.bearer);
      seen_down = seen_down || h.status != 200;
      if (h.status == 200 && (seen_down || now_s() - k.at_s >= 0.2) &&
          !descendants(o_.server_pid).empty()) {
        k.recovery_s = now_s() - k.at_s;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    log_ << "soak: "
         << (k.recovery_s >= 0 ? "healthy again after " + std::to_string(k.recovery_s) + " s"
                               : std::string("not healthy again"))
         << "\n";
    std::lock_guard lock(mu_);
    r_.kills.push_back(k);
  }

  void load_phase(double seconds, bool kills) {
    const Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(seconds));
    std::atomic<int> unread_now{0};
    std::atomic<bool> running{true};
    std::vector<std::thread> threads;
    for (int c = 0; c < o_.concurrency; ++c)
      threads.emplace_back(
          [&, c] { client_loop(o_.seed * 1000003 + seed_salt_++ + c, end, unread_now); });
    std::thread watch([&] {
      std::mt19937_64 rng(o_.seed + 17);
      double next_kill = o_.kill_rank_every;
      const auto begin = Clock::now();
      while (running) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        check_alive();
        const uint64_t m = rss();
        {
          std::lock_guard lock(mu_);
          r_.rss_peak = std::max(r_.rss_peak, m);
        }
        const double t = std::chrono::duration<double>(Clock::now() - begin).count();
        if (kills && t >= next_kill && Clock::now() < end) {
          kill_a_rank(rng);
          next_kill = t + o_.kill_rank_every;
        }
      }
    });
    for (auto& t : threads) t.join();
    running = false;
    watch.join();
  }

  // 5xx and transport failures inside a kill window (the kill to a second after healing, or to
  // the end if it never healed) belong to that kill; any other is a defect.
  void judge() {
    auto in_window = [&](const ServerError& e) {
      for (const RankKill& k : r_.kills) {
        const double close = k.recovery_s >= 0 ? k.at_s + k.recovery_s + 1.0 : 1e300;
        if (e.end_s >= k.at_s && e.start_s <= close) return true;
      }
      return false;
    };
    for (const ServerError& e : server_errors_) {
      const bool rank = in_window(e);
      ++r_.outcomes[e.kind][rank ? "5xx_rank_kill" : "5xx"];
      if (!rank && r_.samples.size() < 20)
        r_.samples.push_back(e.kind + ": " + std::to_string(e.status) + " " + e.body);
    }
    uint64_t stray_5xx = 0, stray_transport = 0;
    for (const ServerError& e : server_errors_) stray_5xx += !in_window(e);
    for (const ServerError& e : transport_errors_) stray_transport += !in_window(e);
    auto fail = [&](const std::string& s) { r_.failures.push_back(s); };
    if (stray_5xx) fail(std::to_string(stray_5xx) + " 5xx answers outside rank kills");
    if (stray_transport)
      fail(std::to_string(stray_transport) + " transport failures outside rank kills");
    for (auto& [kind, outcomes] : r_.outcomes)
      for (const char* bad : {"accepted", "no_done", "unparsable"})
        if (outcomes.count(bad))
          fail(std::to_string(outcomes.at(bad)) + " " + kind + " requests ended '" + bad + "'");
    for (const RankKill& k : r_.kills)
      if (k.recovery_s < 0)
        fail("rank " + std::to_string(k.pid) + " killed at " + std::to_string(k.at_s) +
             " s: the server did not heal within " + std::to_string(o_.recovery_limit) + " s");
    if (o_.expect_invariant && r_.greedy_text_mismatches + r_.greedy_logprob_mismatches)
      fail(std::to_string(r_.greedy_text_mismatches) + " greedy texts and " +
           std::to_string(r_.greedy_logprob_mismatches) +
           " greedy log-prob lists differ from their solo runs");
    if (!(r_.kv_blocks_end == 0))
      fail("KV cache not empty at the end: " + std::to_string(r_.kv_blocks_end) + " blocks");
    if (o_.server_pid > 0 && static_cast<double>(r_.rss_end) >
                                 static_cast<double>(r_.rss_start) * (1 + o_.rss_tolerance))
      fail("server private RSS (RssAnon) grew from " + std::to_string(r_.rss_start >> 20) +
           " MiB to " + std::to_string(r_.rss_end >> 20) + " MiB");
  }

  SoakOptions o_;
  std::ostream& log_;
  HttpClient client_;
  Clock::time_point t0_;
  std::vector<MalformedRequest> malformed_;
  std::vector<GreedyReference> greedy_;
  std::atomic<uint64_t> seed_salt_{0};
  std::atomic<bool> server_died_{false};
  std::mutex mu_;
  SoakReport r_;
  std::vector<ServerError> server_errors_, transport_errors_;
};

}  // namespace

std::string SoakReport::json() const {
  nlohmann::json kills_json = nlohmann::json::array();
  for (const RankKill& k : kills)
    kills_json.push_back(
        {{"pid", k.pid}, {"name", k.name}, {"at_s", k.at_s}, {"recovery_s", k.recovery_s}});
  uint64_t served = 0;
  for (auto& [kind, o] : outcomes)
    if (kind != "malformed" && o.count("ok")) served += o.at("ok");
  return nlohmann::json{
      {"seconds", seconds},
      {"requests_served", served},
      {"outcomes", outcomes},
      {"greedy_text_mismatches", greedy_text_mismatches},
      {"greedy_logprob_mismatches", greedy_logprob_mismatches},
      {"rss_bytes",
       {{"launch", rss_launch}, {"start", rss_start}, {"peak", rss_peak}, {"end", rss_end}}},
      {"kv_blocks_end", kv_blocks_end},
      {"rank_kills", kills_json},
      {"samples", samples},
      {"failures", failures},
      {"passed", failures.empty()}}
      .dump(2);
}

SoakReport run_soak(const SoakOptions& options, std::ostream& log) {
  return Soak(options, log).run();
}

}  // namespace sandwich::bench
