#include "completion_job.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/log.h"
#include "json_response.h"
#include "queue_job.h"
#include "request_log.h"
#include "special_text_filter.h"
#include "tool_call_stream.h"

namespace sandwich::server {

// A timeout is the client's to retry (408), a shutdown or an engine that stopped for good is the
// server going away (503), the rest is the server's fault.
HttpResponse abort_error(const engine::RequestOutput& o) {
  switch (o.abort_reason) {
    case engine::AbortReason::Timeout:
      return json_error(
          408,
          "the request did not finish within the server's --request-timeout; retry it, or ask for "
          "fewer tokens",
          "timeout_error");
    case engine::AbortReason::Shutdown:
      return json_error(503, "the server shut down before the request finished; retry it",
                        "server_error");
    case engine::AbortReason::Unavailable:
      return json_error(503,
                        "the engine stopped while generating this request (the server is "
                        "restarting); retry it: " +
                            o.error,
                        "server_error");
    case engine::AbortReason::Grammar:
      // The request's grammar, not the server: no sequence of tokens can satisfy it.
      return json_error(400, "structured output could not be generated: " + o.error,
                        "invalid_request_error");
    default:
      return json_error(500, "the engine failed while generating this request: " + o.error,
                        "server_error");
  }
}

namespace {

using json = nlohmann::json;

// One request (all its prompts and choices) while the engine works on it.
class Job {
 public:
  Job(const GenerateRequest& req, const WireFormat& format, ResponseHeader header,
      const CompletionEnv& env, std::shared_ptr<Responder> out)
      : format_(format),
        header_(std::move(header)),
        stream_(req.stream),
        include_usage_(req.include_usage),
        logprobs_(req.logprobs),
        prompt_logprobs_(req.prompt_logprobs),
        prompts_(req.prompt_logprobs >= 0 ? req.prompts : std::vector<std::vector<int32_t>>{}),
        n_per_prompt_(static_cast<size_t>(req.n)),
        tok_(env.tokenizer),
        scheduler_(env.scheduler),
        active_(env.active),
        out_(std::move(out)),
        choices_(req.sequences()),
        remaining_(static_cast<int>(req.sequences())) {
    if (req.tool_calls.kind == ToolCallParsing::Kind::Off) return;
    // Special tokens are decoded for the parser (run_completion); the client asked not to see
    // them, so they are dropped again, the markers once the parser has read them.
    const bool filter = req.tool_calls.kind == ToolCallParsing::Kind::Format &&
                        req.skip_special_tokens && env.special_texts;
    for (Choice& c : choices_) {
      c.tools = std::make_unique<ToolCallStream>(req.tool_calls);
      if (filter) c.filter = std::make_unique<SpecialTextFilter>(*env.special_texts);
    }
  }

  // The engine's news of sequence `idx` (on the engine thread).
  void on_output(size_t idx, const engine::RequestOutput& o);
  // The client went away: cancels what is queued.
  void disconnected();
  // Every sequence is queued, with these engine ids.
  void queued(std::vector<uint64_t> ids);

 private:
  struct Choice {
    std::string text, finish_reason;
    int32_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
    bool done = false, sent_first = false;
    int32_t prev_token = -1;
    // Bytes of the completion before the next token's text. Not text.size(): text lags behind
    // the tokens while a possible stop string or a partial UTF-8 character is held back.
    size_t token_offset = 0;
    json logprob_entries = json::array();  // whole responses: all of them
    // Requests with tools: the output into content and calls.
    std::unique_ptr<SpecialTextFilter> filter;
    std::unique_ptr<ToolCallStream> tools;
    json tool_calls = json::array();  // whole responses: all of them
    std::vector<engine::PromptTokenLogprob> prompt_logprobs;
  };
  // What one output of the engine adds to a choice for the client.
  struct News {
    std::string text;
    json tool_calls = json::array();
  };
  static News take(Choice& c, const engine::RequestOutput& o);

  json logprobs_delta(Choice& c, const engine::RequestOutput& o);
  std::string stream_chunk(size_t idx, Choice& c, News news, bool finished, json lp);
  json prompt_logprobs_json(size_t idx) const;
  Usage usage() const;
  void start_stream();
  void reply_whole();
  void note_finish(const engine::RequestOutput& o, const std::optional<std::string>& reason);
  void log_finished() const;

  const WireFormat& format_;
  const ResponseHeader header_;
  const bool stream_, include_usage_;
  const int32_t logprobs_, prompt_logprobs_;
  const std::vector<std::vector<int32_t>> prompts_;  // kept for prompt logprobs' text
  const size_t n_per_prompt_;
  const engine::Tokenizer& tok_;
  engine::Scheduler& scheduler_;
  std::atomic<int>& active_;
  const std::shared_ptr<Responder> out_;

  std::mutex mu_;
  std::vector<Choice> choices_;
  std::vector<uint64_t> ids_;  // engine ids, by choice
  int remaining_ = 0;
  bool gone_ = false;    // the client disconnected
  bool closed_ = false;  // answered, or nobody to answer: later outputs are dropped
  // The first abort other than a cancel. The request then fails as a whole: its other sequences
  // are cancelled, and the error goes out once all of them are gone (so that a client retrying
  // at once finds their room free).
  std::optional<HttpResponse> failure_;
  // Streams: the engine may produce output before the response is started (the stream starts
  // only once every sequence is queued, so a full queue can still be a 429). Until then what it
  // says waits here.
  bool started_ = false, held_end_ = false;
  std::string held_;
  std::optional<HttpResponse> held_error_;
  // For the log's line about the request.
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> first_token_;
  std::vector<std::string> reasons_;  // distinct finish reasons, in order
  std::optional<int> failed_status_;  // the first abort other than a cancel
  bool cancelled_ = false;            // a cancel came first: the client went away
};

Job::News Job::take(Choice& c, const engine::RequestOutput& o) {
  News n{o.text};
  if (c.filter) {
    n.text = c.filter->push(n.text);
    if (o.finished) n.text += c.filter->flush();
  }
  if (!c.tools) return n;
  ToolCallStream::Step s = c.tools->push(n.text);
  if (o.finished) {
    ToolCallStream::Step last = c.tools->finish();
    s.content += last.content;
    for (auto& call : last.tool_calls) s.tool_calls.push_back(std::move(call));
  }
  return {std::move(s.content), std::move(s.tool_calls)};
}

void Job::note_finish(const engine::RequestOutput& o, const std::optional<std::string>& reason) {
  if (reason) {
    if (std::find(reasons_.begin(), reasons_.end(), *reason) == reasons_.end())
      reasons_.push_back(*reason);
  } else if (o.abort_reason == engine::AbortReason::Cancelled) {
    if (!failed_status_) cancelled_ = true;
  } else if (!cancelled_ && !failed_status_) {
    failed_status_ = abort_error(o).status;
  }
}

void Job::log_finished() const {
  if (!log_enabled(LogLevel::Info)) return;
  const auto now = std::chrono::steady_clock::now();
  auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
  RequestRecord r;
  r.id = header_.id;
  // 499: nginx's "client closed request".
  r.status = failed_status_ ? *failed_status_ : cancelled_ ? 499 : 200;
  const Usage u = usage();
  r.prompt_tokens = u.prompt_tokens;
  r.output_tokens = u.completion_tokens;
  if (first_token_) r.ttft_seconds = secs(*first_token_ - start_);
  r.e2e_seconds = secs(now - start_);
  for (const auto& reason : reasons_)
    r.finish_reason += (r.finish_reason.empty() ? "" : ",") + reason;
  if (r.finish_reason.empty()) r.finish_reason = "abort";
  log_line(LogLevel::Info, "request", request_log_message(r));
}

json Job::logprobs_delta(Choice& c, const engine::RequestOutput& o) {
  auto text = [&](int32_t t) { return tok_.piece(t, c.prev_token < 0 ? t : c.prev_token); };
  json entries = json::array();
  for (const auto& lp : o.logprobs) {
    TokenLogprobText t{text(lp.token), lp.logprob, {}};
    for (auto& alt : lp.top) t.top.emplace_back(text(alt.token), alt.logprob);
    entries.push_back(format_.logprob_entry(t, c.token_offset));
    c.token_offset += t.token.size();
    c.prev_token = lp.token;
  }
  return entries;
}

void Job::on_output(size_t idx, const engine::RequestOutput& o) {
  std::string chunk;
  bool end_stream = false, whole = false;
  std::optional<HttpResponse> error;
  std::vector<uint64_t> to_cancel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Choice& c = choices_[idx];
    bool all_done = false;
    if (!first_token_ && !o.tokens.empty()) first_token_ = std::chrono::steady_clock::now();
    std::optional<std::string> reason = o.finished ? openai_finish_reason(o) : std::nullopt;
    // Before an abort's output is dropped below; of a finished one, the calls settle the reason.
    News news = o.finished && !reason ? News{} : take(c, o);
    if (reason && c.tools && c.tools->made_calls()) reason = "tool_calls";
    if (o.finished) {
      c.done = true;
      c.prompt_tokens = o.prompt_tokens;
      c.completion_tokens = o.completion_tokens;
      note_finish(o, reason);
      all_done = --remaining_ == 0;
      if (all_done) {
        --active_;
        log_finished();
      }
    }
    if (closed_) return;
    if (o.finished && !reason) {
      // An abort. A cancel first means nobody is listening any more.
      if (o.abort_reason == engine::AbortReason::Cancelled && !failure_) {
        closed_ = true;
        return;
      }
      if (!failure_) {
        failure_ = abort_error(o);
        for (size_t i = 0; i < choices_.size() && i < ids_.size(); ++i)
          if (!choices_[i].done) to_cancel.push_back(ids_[i]);
      }
    }
    if (failure_) {
      if (all_done) {
        closed_ = true;
        if (!stream_) {
          error = *failure_;
        } else if (!started_) {
          held_error_ = *failure_;
        } else {
          chunk = sse_event(failure_->body);
          chunk += kSseDone;
          end_stream = true;
        }
      }
    } else {
      c.text += news.text;
      c.prompt_tokens = o.prompt_tokens;
      c.completion_tokens = o.completion_tokens;
      c.cached_tokens = o.cached_tokens;
      if (!o.prompt_logprobs.empty()) c.prompt_logprobs = o.prompt_logprobs;
      json lp = logprobs_ >= 0 ? logprobs_delta(c, o) : json::array();
      if (logprobs_ < 0 && !o.tokens.empty()) c.prev_token = o.tokens.back();
      if (reason) c.finish_reason = *reason;
      if (!stream_) {
        for (auto& e : lp) c.logprob_entries.push_back(std::move(e));
        // A message's calls have no index; only stream deltas do.
        for (auto& call : news.tool_calls) {
          call.erase("index");
          c.tool_calls.push_back(std::move(call));
        }
        whole = all_done;
      } else {
        if (!news.text.empty() || o.finished || !lp.empty() || !news.tool_calls.empty())
          chunk = stream_chunk(idx, c, std::move(news), o.finished, std::move(lp));
        if (all_done) {
          if (include_usage_) chunk += sse_event(dump_json(format_.usage_chunk(header_, usage())));
          chunk += kSseDone;
          end_stream = true;
        }
      }
    }
    if (stream_ && !started_) {
      held_ += chunk;
      held_end_ |= end_stream;
      chunk.clear();
      end_stream = false;
    }
  }
  for (auto id : to_cancel) scheduler_.cancel(id);
  if (error) out_->reply(std::move(*error));
  if (!chunk.empty()) out_->send(std::move(chunk));
  if (end_stream) out_->end();
  if (whole) reply_whole();
}

std::string Job::stream_chunk(size_t idx, Choice& c, News news, bool finished, json lp) {
  std::string events;
  if (!c.sent_first) {
    if (auto opening = format_.opening_chunk(header_, idx)) events = sse_event(dump_json(*opening));
    c.sent_first = true;
  }
  ChoiceDelta d;
  d.index = idx;
  d.text = std::move(news.text);
  if (logprobs_ >= 0 && !lp.empty()) d.logprobs = std::move(lp);
  if (!news.tool_calls.empty()) {
    d.tool_calls = std::move(news.tool_calls);
    // The calls in a chunk of their own, the finish reason after them in another, as OpenAI.
    if (!finished) return events + sse_event(dump_json(format_.chunk(header_, d)));
    events += sse_event(dump_json(format_.chunk(header_, d)));
    d = ChoiceDelta{};
    d.index = idx;
  }
  if (finished) d.finish_reason = c.finish_reason;
  return events + sse_event(dump_json(format_.chunk(header_, d)));
}

// vLLM's shape: null for the first prompt token, then per token {"<id>": {logprob, rank,
// decoded_token}} for the prompt's token and the top n.
json Job::prompt_logprobs_json(size_t idx) const {
  const std::vector<int32_t>& prompt = prompts_[idx / n_per_prompt_];
  json out = json::array({nullptr});
  const auto& lps = choices_[idx - idx % n_per_prompt_].prompt_logprobs;
  for (size_t j = 0; j < lps.size() && j + 1 < prompt.size(); ++j) {
    const engine::PromptTokenLogprob& lp = lps[j];
    const int32_t prev = prompt[j];
    auto entry = [&](int32_t token, float logprob, int32_t rank) {
      return json{{"logprob", logprob}, {"rank", rank}, {"decoded_token", tok_.piece(token, prev)}};
    };
    json e = json::object();
    e[std::to_string(lp.token)] = entry(lp.token, lp.logprob, lp.rank);
    for (size_t i = 0; i < lp.top.size(); ++i) {
      const std::string key = std::to_string(lp.top[i].token);
      if (!e.contains(key))
        e[key] = entry(lp.top[i].token, lp.top[i].logprob, static_cast<int32_t>(i + 1));
    }
    out.push_back(std::move(e));
  }
  return out;
}

Usage Job::usage() const {
  Usage u;
  // Each prompt counts once even when n > 1 asks for several choices of it.
  for (size_t i = 0; i < choices_.size(); ++i) {
    u.completion_tokens += choices_[i].completion_tokens;
    if (i % n_per_prompt_ != 0) continue;
    u.prompt_tokens += choices_[i].prompt_tokens;
    u.cached_tokens += choices_[i].cached_tokens;
  }
  return u;
}

void Job::reply_whole() {
  json j;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<ChoiceResult> rs;
    for (size_t i = 0; i < choices_.size(); ++i) {
      Choice& c = choices_[i];
      ChoiceResult r;
      r.text = c.text;
      r.finish_reason = c.finish_reason;
      if (logprobs_ >= 0) r.logprobs = std::move(c.logprob_entries);
      if (c.tools && c.tools->made_calls()) r.tool_calls = std::move(c.tool_calls);
      if (prompt_logprobs_ >= 0) r.prompt_logprobs = prompt_logprobs_json(i);
      rs.push_back(std::move(r));
    }
    j = format_.response(header_, rs, usage());
  }
  out_->reply(json_response(j));
}

void Job::disconnected() {
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gone_ = true;
    ids = ids_;
  }
  for (auto id : ids) scheduler_.cancel(id);
}

void Job::queued(std::vector<uint64_t> ids) {
  std::vector<uint64_t> to_cancel;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ids_ = std::move(ids);
    // The client left, or a sequence failed, while they were being queued.
    if (gone_ || failure_)
      for (size_t i = 0; i < ids_.size(); ++i)
        if (!choices_[i].done) to_cancel.push_back(ids_[i]);
  }
  for (auto id : to_cancel) scheduler_.cancel(id);
  // Only now, with every sequence queued, can a stream commit to 200.
  if (stream_) start_stream();
}

// Streams: every sequence is queued; start the response and pass on what was held.
void Job::start_stream() {
  std::lock_guard<std::mutex> lock(mu_);
  // Under the lock, so that nothing the engine sends later can overtake it.
  if (held_error_) {
    out_->reply(std::move(*held_error_));
  } else {
    out_->start_stream(200, "text/event-stream");
    if (!held_.empty()) out_->send(std::move(held_));
    if (held_end_) out_->end();
  }
  started_ = true;
}

}  // namespace

void run_completion(const GenerateRequest& req, const WireFormat& format, ResponseHeader header,
                    std::chrono::seconds timeout, const CompletionEnv& env,
                    std::shared_ptr<Responder> out) {
  auto job = std::make_shared<Job>(req, format, std::move(header), env, out);
  std::vector<engine::EngineRequest> rs;
  // One deadline for all: they time out together, and the request fails once.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const int32_t max_len = env.scheduler.max_model_len();
  size_t idx = 0;
  for (auto& p : req.prompts)
    for (int i = 0; i < req.n; ++i, ++idx) {
      engine::EngineRequest r;
      r.prompt = p;
      r.sampling = req.sampling;
      if (r.sampling.seed) r.sampling.seed = *r.sampling.seed + static_cast<uint64_t>(i);
      r.max_tokens = req.max_tokens < 0 ? max_len - static_cast<int32_t>(p.size()) : req.max_tokens;
      r.stop = req.stop;
      r.ignore_eos = req.ignore_eos;
      r.stop_token_ids = req.stop_token_ids;
      r.min_tokens = req.min_tokens;
      // The parser must see its markers (<|python_tag|>, [TOOL_CALLS]): special tokens are kept
      // and dropped from the content again by the job.
      r.skip_special_tokens =
          req.tool_calls.kind == ToolCallParsing::Kind::Format ? false : req.skip_special_tokens;
      r.logprobs = req.logprobs;
      r.grammar = req.grammar_automaton;
      // The choices of a prompt share its logprobs: the first computes them.
      r.prompt_logprobs = i == 0 ? req.prompt_logprobs : -1;
      r.deadline = deadline;
      r.on_output = [job, idx](const engine::RequestOutput& o) { job->on_output(idx, o); };
      rs.push_back(std::move(r));
    }
  queue_job(job, std::move(rs), env.scheduler, env.active, *out);
}

}  // namespace sandwich::server
