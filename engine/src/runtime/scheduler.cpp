#include "engine/runtime/scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "engine/runtime/batch_entry.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/stop_strings.h"
#include "engine/text/tokenizer.h"
#include "runtime/prefix_cache.h"

namespace sandwich::engine {
namespace {
using Clock = std::chrono::steady_clock;
// Rows of logits a step keeps for prompt logprobs beyond one per sequence: a vocabulary of 128k
// makes that 128 MiB of logits.
constexpr int32_t kPromptLogprobRows = 256;
double secs(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
}  // namespace

struct Seq {
  uint64_t id = 0;
  EngineRequest req;
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int32_t n_prompt = 0;
  int32_t n_computed = 0;  // positions whose K/V are cached
  std::vector<int32_t> blocks;
  PrefixChain chain;
  int32_t cached_tokens = -1;  // prompt tokens found in the prefix cache at first admission
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<IncrementalDecoder> decoder;
  std::unique_ptr<StopStringMatcher> stops;
  std::unique_ptr<grammar::GrammarMatcher> matcher;  // made on the engine thread, when first used
  Clock::time_point arrival, last_token;
  Clock::time_point scheduled, first_token;  // first admission; first token (has_first)
  bool was_scheduled = false;
  bool has_first = false;
  bool done = false;
  bool queued = true;  // waiting (counted in st.waiting), not running
  // Embeddings: the pooled final hidden states of the positions computed so far (their sum for
  // a mean).
  std::vector<double> pooled;
  // Prompt logprobs: the next prompt position owed one (they start at 1), those computed so far,
  // and whether they went out (with the first output).
  int32_t prompt_lp_next = 1;
  std::vector<PromptTokenLogprob> prompt_lp;
  bool prompt_lp_sent = false;

  bool embeds() const { return req.embed.has_value(); }
  bool owes_prompt_logprobs() const {
    return req.prompt_logprobs >= 0 && prompt_lp_next < n_prompt;
  }
  // Such a sequence must compute every position: a prefix-cache hit would skip some.
  bool needs_every_position() const { return embeds() || owes_prompt_logprobs(); }
  int32_t generated() const { return static_cast<int32_t>(tokens.size()) - n_prompt; }
  // An embedding prefills its whole prompt; a generation leaves the last token to a decode step
  // when a chunk ends just before it.
  bool in_prefill() const {
    return n_computed < static_cast<int32_t>(tokens.size()) - (embeds() ? 0 : 1);
  }
  std::span<const int32_t> prompt() const { return {tokens.data(), static_cast<size_t>(n_prompt)}; }
  std::span<const int32_t> output() const {
    return {tokens.data() + n_prompt, tokens.size() - static_cast<size_t>(n_prompt)};
  }
};

struct Scheduler::Impl {
  const Model& model;
  SchedulerOptions opt;
  std::unique_ptr<KVCache> kv;
  std::unique_ptr<PrefixCache> cache;
  std::unique_ptr<Executor> prefill_ex, decode_ex;  // decode_ex null when both phases share one
  std::vector<int32_t> stop_ids;

  Histogram ttft{latency_buckets()};
  Histogram itl{inter_token_buckets()};
  Histogram e2e{latency_buckets()};
  Histogram queue_time{latency_buckets()}, prefill_time{latency_buckets()},
      decode_time{latency_buckets()};
  std::unique_ptr<Histogram> prompt_len, gen_len;  // buckets up to max_model_len

  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<Seq>> inbox;
  std::vector<uint64_t> cancels;
  bool stopping = false, finish_on_stop = true;
  uint64_t next_id = 1;
  SchedulerStats st;  // guarded by mu

  // Engine thread only.
  std::deque<std::unique_ptr<Seq>> waiting;
  std::vector<std::unique_ptr<Seq>> running;  // in admission order
  bool last_was_prefill = false;
  std::mt19937_64 seeds{std::random_device{}()};
  std::vector<float> logits, hidden;
  int32_t max_logit_rows = 0;  // of one step (ExecutorLimits::max_logit_rows)
  std::vector<Seq*> in_step;   // the sequences of the step under way
  double grammar_seconds = 0;  // not yet in st (published with the counts)
  uint64_t grammar_tokens = 0;
  std::thread thread;
  std::mutex join_mu;

  Impl(const Model& m, const SchedulerOptions& o) : model(m), opt(o) {}

  void loop();
  void admit();
  void prefill_step();
  void decode_step();
  void accept_token(Seq& s, float* row);
  void accept_constrained_token(Seq& s, float* row);
  void accept_sampled_token(Seq& s, float* row, TokenConstraint* constraint);
  void take_prompt_logprobs(Seq& s, const float* rows, int32_t first_pos, int32_t n);
  void attach_prompt_logprobs(Seq& s, RequestOutput& out);
  void finish_embedding(Seq& s);
  bool is_stop_token(const Seq& s, int32_t t) const;
  void finish(Seq& s, FinishReason reason);
  void abort(Seq& s, AbortReason why, const std::string& error);
  void remove_finished();
  void preempt(Seq& s);
  void publish_counts();
  void observe_finished(const Seq& s);
};

Scheduler::Scheduler(const Model& model, const SchedulerOptions& options)
    : impl_(new Impl(model, options)) {
  Impl& I = *impl_;
  const ModelConfig& c = model.config;
  if (!model.tokenizer) throw std::invalid_argument("the scheduler needs a model with a tokenizer");
  if (I.opt.max_num_seqs < 1) throw std::invalid_argument("max_num_seqs must be at least 1");
  if (I.opt.max_batched_tokens < 1)
    throw std::invalid_argument("max_batched_tokens must be at least 1");
  // Past the model's context the positions were never trained: refused, as vLLM does (not
  // clamped, which would leave a client's long prompt to fail later, far from the cause).
  if (I.opt.max_model_len > c.max_seq_len)
    throw std::invalid_argument("max_model_len " + std::to_string(I.opt.max_model_len) +
                                " (-c, --max-model-len) is larger than the model's context (" +
                                std::to_string(c.max_seq_len) + " tokens); give at most " +
                                std::to_string(c.max_seq_len) +
                                ", or leave it out for the model's");
  if (I.opt.max_model_len <= 0) I.opt.max_model_len = c.max_seq_len;
  const KVCacheDType kv_dtype = I.opt.kv_cache_dtype;
  // A pipeline stage's cache holds its own layers: the default budget is its share.
  const LayerRange layers = model.layers();
  const size_t sequence_bytes = KVCache::bytes_for_tokens(c, I.opt.max_model_len, kv_dtype, layers);
  if (I.opt.kv_cache_bytes == 0)
    I.opt.kv_cache_bytes = std::max(
        sequence_bytes, std::min<size_t>(size_t{4} << 30,
                                         sequence_bytes * static_cast<size_t>(I.opt.max_num_seqs)));
  I.prompt_len = std::make_unique<Histogram>(length_buckets(I.opt.max_model_len));
  I.gen_len = std::make_unique<Histogram>(length_buckets(I.opt.max_model_len));
  I.kv = std::make_unique<KVCache>(c, I.opt.kv_cache_bytes, kv_dtype, layers);
  I.cache = std::make_unique<PrefixCache>(*I.kv, I.opt.enable_prefix_caching);
  if (I.kv->num_blocks() < KVCache::blocks_for(I.opt.max_model_len))
    throw std::invalid_argument("the KV cache (" + std::to_string(I.opt.kv_cache_bytes) +
                                " bytes) cannot hold one sequence of max_model_len " +
                                std::to_string(I.opt.max_model_len) +
                                " tokens; raise it or lower max_model_len");
  const topotree::ServiceConfig pc = I.opt.prefill_config.value_or(single_rank_config(0));
  const topotree::ServiceConfig dc = I.opt.decode_config.value_or(pc);
  ExecutorLimits limits;
  limits.max_tokens = std::max(I.opt.max_batched_tokens, I.opt.max_num_seqs);
  limits.max_entries = I.opt.max_num_seqs;
  // Prompt logprobs need a row of logits per prompt token; their chunks are cut to fit.
  limits.max_logit_rows = limits.max_entries + std::min(limits.max_tokens, kPromptLogprobRows);
  I.max_logit_rows = limits.max_logit_rows;
  limits.batch_invariant = I.opt.batch_invariant;
  limits.ablation = I.opt.ablation;
  limits.step_timeout_seconds = I.opt.rank_step_timeout_seconds;
  const ExecutorFactory make = I.opt.executor_factory ? I.opt.executor_factory : make_executor;
  limits.role = dc == pc ? "prefill and decode" : "prefill";
  I.prefill_ex = make(model, *I.kv, pc, limits);
  limits.role = "decode";
  if (!(dc == pc)) I.decode_ex = make(model, *I.kv, dc, limits);
  I.stop_ids = model.tokenizer->stop_ids();
  I.st.kv_blocks_total = I.kv->num_blocks();
  I.thread = std::thread([this] { impl_->loop(); });
}

Scheduler::~Scheduler() {
  shutdown(false);
}

int32_t Scheduler::max_model_len() const {
  return impl_->opt.max_model_len;
}
const KVCache& Scheduler::kv_cache() const {
  return *impl_->kv;
}
int32_t Scheduler::max_waiting() const {
  return impl_->opt.max_waiting;
}
int32_t Scheduler::max_num_seqs() const {
  return impl_->opt.max_num_seqs;
}
const Histogram& Scheduler::ttft() const {
  return impl_->ttft;
}
const Histogram& Scheduler::inter_token() const {
  return impl_->itl;
}
const Histogram& Scheduler::e2e() const {
  return impl_->e2e;
}
const Histogram& Scheduler::queue_time() const {
  return impl_->queue_time;
}
const Histogram& Scheduler::prefill_time() const {
  return impl_->prefill_time;
}
const Histogram& Scheduler::decode_time() const {
  return impl_->decode_time;
}
const Histogram& Scheduler::prompt_length() const {
  return *impl_->prompt_len;
}
const Histogram& Scheduler::generation_length() const {
  return *impl_->gen_len;
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    s = impl_->st;
  }
  const ExecutorHealth h = executor_health();
  s.rank_restarts = h.restarts;
  s.rank_last_recovery_seconds = h.last_recovery_seconds;
  return s;
}

ExecutorHealth Scheduler::executor_health() const {
  ExecutorHealth h = impl_->prefill_ex->health();
  if (impl_->decode_ex) {
    const ExecutorHealth d = impl_->decode_ex->health();
    if (d.failed || (d.restarting && !h.failed) || h.message.empty()) h.message = d.message;
    h.restarting = h.restarting || d.restarting;
    h.failed = h.failed || d.failed;
    h.restarts += d.restarts;
    h.last_recovery_seconds = std::max(h.last_recovery_seconds, d.last_recovery_seconds);
  }
  return h;
}

uint64_t Scheduler::submit(EngineRequest r) {
  std::vector<EngineRequest> one;
  one.push_back(std::move(r));
  return submit(std::move(one))[0];
}

std::vector<uint64_t> Scheduler::submit(std::vector<EngineRequest> rs) {
  Impl& I = *impl_;
  if (static_cast<int64_t>(rs.size()) > I.opt.max_waiting)
    throw std::invalid_argument("the request has " + std::to_string(rs.size()) +
                                " sequences but the waiting queue holds at most " +
                                std::to_string(I.opt.max_waiting));
  // Everything that can fail on its own is checked before any sequence is queued.
  std::vector<std::unique_ptr<Seq>> seqs;
  for (auto& r : rs) {
    const int64_t n = static_cast<int64_t>(r.prompt.size());
    if (n == 0) throw std::invalid_argument("the prompt is empty");
    if (r.embed) {
      // Nothing is generated: what matters is the prompt.
      r.max_tokens = 0;
      r.min_tokens = 0;
      if (n > I.opt.max_model_len)
        throw std::invalid_argument("this model's maximum context length is " +
                                    std::to_string(I.opt.max_model_len) +
                                    " tokens; the input has " + std::to_string(n));
    } else if (r.max_tokens < 1) {
      throw std::invalid_argument("max_tokens must be at least 1");
    } else if (n + r.max_tokens > I.opt.max_model_len)
      throw std::invalid_argument(
          "this model's maximum context length is " + std::to_string(I.opt.max_model_len) +
          " tokens; the request has " + std::to_string(n) + " prompt tokens and asks for " +
          std::to_string(r.max_tokens) + " more");
    if (r.prompt_logprobs > I.model.config.vocab_size)
      r.prompt_logprobs = I.model.config.vocab_size;
    if (r.min_tokens < 0 || r.min_tokens > r.max_tokens)
      throw std::invalid_argument("min_tokens (" + std::to_string(r.min_tokens) +
                                  ") must be between 0 and max_tokens (" +
                                  std::to_string(r.max_tokens) + ")");
    for (const auto* ids : {&r.prompt, &r.stop_token_ids})
      for (int32_t t : *ids)
        if (t < 0 || t >= I.model.config.vocab_size)
          throw std::invalid_argument("token id " + std::to_string(t) +
                                      " is outside the vocabulary");
    auto s = std::make_unique<Seq>();
    uint64_t seed;
    {
      std::lock_guard<std::mutex> lock(I.mu);
      seed = I.seeds();
    }
    // Checks the sampling parameters (logit_bias too) before any sequence is queued.
    s->sampler = std::make_unique<Sampler>(r.sampling, I.model.config.vocab_size, seed);
    s->tokens = r.prompt;
    s->n_prompt = static_cast<int32_t>(n);
    s->arrival = Clock::now();
    s->decoder = std::make_unique<IncrementalDecoder>(*I.model.tokenizer, r.prompt.back(),
                                                      !r.skip_special_tokens);
    s->stops = std::make_unique<StopStringMatcher>(r.stop);
    s->req = std::move(r);
    seqs.push_back(std::move(s));
  }
  std::lock_guard<std::mutex> lock(I.mu);
  if (I.stopping) throw QueueFull("the server is shutting down");
  if (I.st.waiting + static_cast<int64_t>(seqs.size()) > I.opt.max_waiting)
    throw QueueFull("the waiting queue is full (" + std::to_string(I.opt.max_waiting) +
                    " sequences); retry later");
  std::vector<uint64_t> ids;
  for (auto& s : seqs) {
    s->id = I.next_id++;
    ids.push_back(s->id);
    I.inbox.push_back(std::move(s));
    ++I.st.waiting;
  }
  I.cv.notify_one();
  return ids;
}

void Scheduler::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->cancels.push_back(id);
  impl_->cv.notify_one();
}

void Scheduler::request_shutdown(bool finish) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->stopping) impl_->finish_on_stop = finish;
  if (!finish) impl_->finish_on_stop = false;
  impl_->stopping = true;
  impl_->cv.notify_one();
}

void Scheduler::shutdown(bool finish) {
  request_shutdown(finish);
  std::lock_guard<std::mutex> lock(impl_->join_mu);
  if (impl_->thread.joinable()) impl_->thread.join();
}

void Scheduler::Impl::publish_counts() {
  std::lock_guard<std::mutex> lock(mu);
  st.waiting = static_cast<int32_t>(waiting.size() + inbox.size());
  st.running = static_cast<int32_t>(running.size());
  st.kv_blocks_used = cache->used_blocks();
  st.kv_blocks_cached = cache->cached_blocks();
  st.grammar_seconds += grammar_seconds;
  st.grammar_tokens += grammar_tokens;
  grammar_seconds = 0;
  grammar_tokens = 0;
}

void Scheduler::Impl::abort(Seq& s, AbortReason why, const std::string& error) {
  RequestOutput out;
  out.finished = true;
  out.finish_reason = FinishReason::Abort;
  out.error = error;
  out.abort_reason = why;
  out.prompt_tokens = s.n_prompt;
  out.completion_tokens = s.generated();
  out.cached_tokens = std::max(s.cached_tokens, 0);
  cache->release(s.blocks, s.chain);
  s.done = true;
  {
    // Out of the queue's count before anyone hears of it: a client told that its request failed
    // may retry at once, and must not find the queue still full of that request.
    std::lock_guard<std::mutex> lock(mu);
    ++st.finished_abort;
    if (s.queued) --st.waiting;
    s.queued = false;
  }
  observe_finished(s);
  if (s.req.on_output) s.req.on_output(out);
}

// A phase the request never reached is not observed.
void Scheduler::Impl::observe_finished(const Seq& s) {
  const auto now = Clock::now();
  e2e.observe(secs(now - s.arrival));
  if (s.was_scheduled) queue_time.observe(secs(s.scheduled - s.arrival));
  if (s.has_first) {
    prefill_time.observe(secs(s.first_token - s.scheduled));
    decode_time.observe(secs(now - s.first_token));
  }
  prompt_len->observe(s.n_prompt);
  gen_len->observe(s.generated());
}

void Scheduler::Impl::finish(Seq& s, FinishReason reason) {
  RequestOutput out;
  out.finished = true;
  out.finish_reason = reason;
  if (!s.stops->stopped()) out.text = s.stops->push(s.decoder->flush()) + s.stops->flush();
  out.prompt_tokens = s.n_prompt;
  out.completion_tokens = s.generated();
  out.cached_tokens = std::max(s.cached_tokens, 0);
  attach_prompt_logprobs(s, out);
  cache->release(s.blocks, s.chain);
  s.done = true;
  // Counted before the client hears of it: one that reads /metrics right after its answer must
  // find its request there.
  observe_finished(s);
  {
    std::lock_guard<std::mutex> lock(mu);
    (reason == FinishReason::Stop ? st.finished_stop : st.finished_length)++;
  }
  if (s.req.on_output) s.req.on_output(out);
}

void Scheduler::Impl::remove_finished() {
  auto done = [](const std::unique_ptr<Seq>& s) { return s->done; };
  running.erase(std::remove_if(running.begin(), running.end(), done), running.end());
  waiting.erase(std::remove_if(waiting.begin(), waiting.end(), done), waiting.end());
}

void Scheduler::Impl::admit() {
  // FCFS: the head of the queue waits for room rather than being overtaken.
  while (!waiting.empty() && static_cast<int32_t>(running.size()) < opt.max_num_seqs) {
    Seq& s = *waiting.front();
    // A preempted sequence looks up again: its own blocks may still be cached.
    const int32_t hit = s.needs_every_position() ? 0 : cache->acquire(s.tokens, s.chain, s.blocks);
    // An embedding writes no position past its prompt.
    const int64_t room = static_cast<int64_t>(s.tokens.size()) + (s.embeds() ? 0 : 1);
    if (!cache->reserve(s.blocks, room)) {
      cache->release(s.blocks, s.chain);
      break;
    }
    s.n_computed = hit;
    if (s.cached_tokens < 0) s.cached_tokens = std::min(hit, s.n_prompt);
    if (cache->enabled() && !s.needs_every_position()) {
      std::lock_guard<std::mutex> lock(mu);
      st.prefix_cache_queries += s.tokens.size();
      st.prefix_cache_hits += static_cast<uint64_t>(hit);
    }
    s.queued = false;
    if (!s.was_scheduled) {
      s.was_scheduled = true;
      s.scheduled = Clock::now();
    }
    running.push_back(std::move(waiting.front()));
    waiting.pop_front();
  }
}

void Scheduler::Impl::preempt(Seq& s) {
  cache->release(s.blocks, s.chain);
  s.n_computed = 0;
  s.pooled.clear();  // its positions run again
  s.queued = true;
  {
    std::lock_guard<std::mutex> lock(mu);
    ++st.preemptions;
    ++st.waiting;
  }
  auto it =
      std::find_if(running.begin(), running.end(), [&](const auto& p) { return p.get() == &s; });
  waiting.push_front(std::move(*it));
  running.erase(it);
}

bool Scheduler::Impl::is_stop_token(const Seq& s, int32_t t) const {
  auto in = [t](const std::vector<int32_t>& ids) {
    return std::find(ids.begin(), ids.end(), t) != ids.end();
  };
  return (!s.req.ignore_eos && in(stop_ids)) || in(s.req.stop_token_ids);
}

namespace {

// The sampler's view of a sequence's grammar, timing what the grammar costs.
class GrammarConstraint final : public TokenConstraint {
 public:
  GrammarConstraint(grammar::GrammarMatcher& m, double& seconds) : m_(m), seconds_(seconds) {}
  bool allows(int32_t token) override {
    const auto t0 = Clock::now();
    const bool ok = m_.allows(token);
    seconds_ += secs(Clock::now() - t0);
    return ok;
  }
  void mask(float* logits, int32_t vocab_size) override {
    const auto t0 = Clock::now();
    m_.mask_logits(logits, vocab_size);
    seconds_ += secs(Clock::now() - t0);
  }

 private:
  grammar::GrammarMatcher& m_;
  double& seconds_;
};

}  // namespace

void Scheduler::Impl::accept_token(Seq& s, float* row) {
  if (s.req.grammar) {
    try {
      accept_constrained_token(s, row);
    } catch (const grammar::GrammarError& e) {
      abort(s, AbortReason::Grammar, e.what());
    }
    return;
  }
  accept_sampled_token(s, row, nullptr);
}

void Scheduler::Impl::accept_constrained_token(Seq& s, float* row) {
  const auto t0 = Clock::now();
  if (!s.matcher) {
    std::vector<int32_t> ends = s.req.stop_token_ids;
    if (!s.req.ignore_eos) ends.insert(ends.end(), stop_ids.begin(), stop_ids.end());
    s.matcher = std::make_unique<grammar::GrammarMatcher>(s.req.grammar, std::move(ends));
  }
  // Room for a whole sentence: the fewer of max_tokens and the context left.
  s.matcher->limit_tokens(std::min(s.req.max_tokens - s.generated(),
                                   opt.max_model_len - static_cast<int32_t>(s.tokens.size())));
  grammar_seconds += secs(Clock::now() - t0);
  ++grammar_tokens;
  GrammarConstraint c(*s.matcher, grammar_seconds);
  accept_sampled_token(s, row, &c);
}

void Scheduler::Impl::accept_sampled_token(Seq& s, float* row, TokenConstraint* constraint) {
  const int32_t V = model.config.vocab_size;
  const bool may_stop = s.generated() >= s.req.min_tokens;
  // Before min_tokens a stop token cannot be sampled at all (as vLLM does), rather than being
  // sampled and dropped.
  if (!may_stop) {
    if (!s.req.ignore_eos)
      for (int32_t t : stop_ids) row[t] = -std::numeric_limits<float>::infinity();
    for (int32_t t : s.req.stop_token_ids) row[t] = -std::numeric_limits<float>::infinity();
  }
  RequestOutput out;
  std::vector<float> raw;
  if (s.req.logprobs >= 0) raw.assign(row, row + V);
  const int32_t next = s.sampler->sample(row, s.prompt(), s.output(), constraint);
  if (next < 0) {
    abort(s, AbortReason::Grammar,
          "the grammar allows no token here (after " + std::to_string(s.generated()) +
              " tokens; an end token is also refused before min_tokens)");
    return;
  }
  if (s.matcher) {
    const auto t0 = Clock::now();
    s.matcher->accept(next);  // an end token too: it must end a whole sentence
    grammar_seconds += secs(Clock::now() - t0);
  }
  const auto now = Clock::now();
  if (!s.has_first) {
    ttft.observe(secs(now - s.arrival));
    s.has_first = true;
    s.first_token = now;
  } else {
    itl.observe(secs(now - s.last_token));
  }
  s.last_token = now;
  if (is_stop_token(s, next)) {
    finish(s, FinishReason::Stop);
    return;
  }
  s.tokens.push_back(next);
  {
    std::lock_guard<std::mutex> lock(mu);
    ++st.generation_tokens;
  }
  out.tokens.push_back(next);
  if (!raw.empty())
    out.logprobs.push_back({next, Sampler::logprob_of(raw.data(), V, next),
                            s.req.logprobs > 0
                                ? Sampler::top_logprobs(raw.data(), V, s.req.logprobs)
                                : std::vector<Sampler::TopLogprob>{}});
  // min_tokens counts this token: the stop string may end in it.
  out.text = s.stops->push(s.decoder->push(next), s.generated() >= s.req.min_tokens);
  out.prompt_tokens = s.n_prompt;
  out.completion_tokens = s.generated();
  out.cached_tokens = s.cached_tokens;
  attach_prompt_logprobs(s, out);
  if (s.req.on_output) s.req.on_output(out);
  if (s.stops->stopped() || (s.matcher && s.matcher->must_end()))
    finish(s, FinishReason::Stop);
  else if (s.generated() >= s.req.max_tokens ||
           static_cast<int32_t>(s.tokens.size()) >= opt.max_model_len)
    // A grammar's whole sentence is a finished answer, not a cut one (OpenAI's SDK refuses to
    // parse structured output that ended for length).
    finish(s, s.matcher && s.matcher->can_end() ? FinishReason::Stop : FinishReason::Length);
}

// Each prompt position p of the chunk [first_pos, first_pos + n) whose row predicts an owed
// prompt token p + 1.
void Scheduler::Impl::take_prompt_logprobs(Seq& s, const float* rows, int32_t first_pos,
                                           int32_t n) {
  const int32_t V = model.config.vocab_size;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t next = first_pos + i + 1;
    if (next != s.prompt_lp_next || next >= s.n_prompt) continue;
    const float* row = rows + static_cast<size_t>(i) * V;
    const int32_t t = s.tokens[next];
    s.prompt_lp.push_back({t, Sampler::logprob_of(row, V, t), Sampler::rank_of(row, V, t),
                           s.req.prompt_logprobs > 0
                               ? Sampler::top_logprobs(row, V, s.req.prompt_logprobs)
                               : std::vector<Sampler::TopLogprob>{}});
    ++s.prompt_lp_next;
  }
}

// With a sequence's first output, whichever it is.
void Scheduler::Impl::attach_prompt_logprobs(Seq& s, RequestOutput& out) {
  if (s.req.prompt_logprobs < 0 || s.prompt_lp_sent) return;
  out.prompt_logprobs = std::move(s.prompt_lp);
  s.prompt_lp_sent = true;
}

void Scheduler::Impl::finish_embedding(Seq& s) {
  RequestOutput out;
  out.finished = true;
  out.finish_reason = FinishReason::Stop;
  out.prompt_tokens = s.n_prompt;
  out.cached_tokens = 0;
  out.embedding = normalized_embedding(s.pooled);
  // Its KV is no one's: the blocks go back at once (full ones stay in the prefix cache).
  cache->release(s.blocks, s.chain);
  s.done = true;
  observe_finished(s);
  {
    std::lock_guard<std::mutex> lock(mu);
    ++st.finished_stop;
  }
  if (s.req.on_output) s.req.on_output(out);
}

void Scheduler::Impl::prefill_step() {
  std::vector<BatchEntry> batch;
  std::vector<Seq*> seqs;
  int32_t budget = opt.max_batched_tokens;
  int32_t rows_left = max_logit_rows;
  for (auto& p : running) {
    Seq& s = *p;
    if (!s.in_prefill() || budget == 0) continue;
    const int32_t total = static_cast<int32_t>(s.tokens.size());
    int32_t n = std::min(budget, total - s.n_computed);
    // Prompt logprobs: a row of logits for every token of the chunk, within the step's rows.
    const bool all_logits = s.owes_prompt_logprobs();
    if (all_logits) n = std::min(n, rows_left);
    if (n == 0) continue;
    const bool last = s.n_computed + n == total;
    BatchEntry e{std::span<const int32_t>(s.tokens).subspan(s.n_computed, n), s.n_computed,
                 s.blocks, last && !s.embeds(), all_logits};
    if (s.embeds())
      e.hidden = *s.req.embed == Pooling::Mean ? HiddenOutput::Sum
                 : last                        ? HiddenOutput::Last
                                               : HiddenOutput::None;
    if (e.logit_rows() > rows_left) continue;
    rows_left -= static_cast<int32_t>(e.logit_rows());
    budget -= n;
    batch.push_back(e);
    seqs.push_back(&s);
  }
  in_step = seqs;
  if (batch.empty()) return;
  int64_t n_logits = 0, n_hidden = 0;
  int32_t n_tokens = 0;
  for (auto& e : batch) {
    n_logits += e.logit_rows();
    n_hidden += e.hidden_rows();
    n_tokens += static_cast<int32_t>(e.tokens.size());
  }
  const int32_t V = model.config.vocab_size, dim = model.config.dim;
  logits.resize(static_cast<size_t>(std::max<int64_t>(n_logits, 1)) * V);
  hidden.resize(static_cast<size_t>(std::max<int64_t>(n_hidden, 1)) * dim);
  const auto t0 = Clock::now();
  prefill_ex->run(batch, logits.data(), n_hidden > 0 ? hidden.data() : nullptr);
  {
    std::lock_guard<std::mutex> lock(mu);
    ++st.prefill_steps;
    st.prefill_seconds += secs(Clock::now() - t0);
    st.prompt_tokens += static_cast<uint64_t>(n_tokens);
  }
  int64_t row = 0, hidden_row = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    Seq& s = *seqs[i];
    const BatchEntry& e = batch[i];
    const int32_t first_pos = s.n_computed, n = static_cast<int32_t>(e.tokens.size());
    s.n_computed += n;
    cache->commit(s.tokens, s.n_computed, s.blocks, s.chain);
    float* rows = logits.data() + static_cast<size_t>(row) * V;
    row += e.logit_rows();
    if (e.all_logits) take_prompt_logprobs(s, rows, first_pos, n);
    if (e.hidden != HiddenOutput::None) {
      const float* h = hidden.data() + static_cast<size_t>(hidden_row++) * dim;
      if (e.hidden == HiddenOutput::Last) s.pooled.assign(dim, 0.0);
      s.pooled.resize(static_cast<size_t>(dim), 0.0);
      for (int32_t k = 0; k < dim; ++k) s.pooled[k] += h[k];
    }
    if (s.embeds() && s.n_computed == static_cast<int32_t>(s.tokens.size()))
      finish_embedding(s);
    else if (e.want_logits)
      accept_token(s, rows + static_cast<size_t>(e.logit_rows() - 1) * V);
  }
}

void Scheduler::Impl::decode_step() {
  // Room for one more position per sequence; preempt the newest sequences when blocks run out.
  for (size_t i = 0; i < running.size();) {
    Seq& s = *running[i];
    if (s.in_prefill() || cache->reserve(s.blocks, s.n_computed + 1)) {
      ++i;
      continue;
    }
    preempt(*running.back());
  }
  std::vector<BatchEntry> batch;
  std::vector<Seq*> seqs;
  uint64_t prompt_tokens = 0;
  for (auto& p : running) {
    Seq& s = *p;
    if (s.in_prefill()) continue;
    batch.push_back({std::span<const int32_t>(s.tokens).subspan(s.n_computed, 1), s.n_computed,
                     s.blocks, true});
    seqs.push_back(&s);
    // The last prompt token of a prompt of one, or left alone by a chunk, is computed here.
    prompt_tokens += s.n_computed < s.n_prompt;
  }
  in_step = seqs;
  if (batch.empty()) return;
  logits.resize(batch.size() * static_cast<size_t>(model.config.vocab_size));
  const auto t0 = Clock::now();
  (decode_ex ? *decode_ex : *prefill_ex).run(batch, logits.data());
  {
    std::lock_guard<std::mutex> lock(mu);
    ++st.decode_steps;
    st.decode_seconds += secs(Clock::now() - t0);
    st.prompt_tokens += prompt_tokens;
  }
  for (size_t i = 0; i < seqs.size(); ++i) {
    seqs[i]->n_computed += 1;
    cache->commit(seqs[i]->tokens, seqs[i]->n_computed, seqs[i]->blocks, seqs[i]->chain);
    accept_token(*seqs[i], logits.data() + i * static_cast<size_t>(model.config.vocab_size));
  }
}

void Scheduler::Impl::loop() {
  for (;;) {
    std::vector<uint64_t> cancel_now;
    bool stop = false, finish_all = true;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] {
        return stopping || !inbox.empty() || !cancels.empty() || !running.empty() ||
               !waiting.empty();
      });
      while (!inbox.empty()) {
        waiting.push_back(std::move(inbox.front()));
        inbox.pop_front();
      }
      cancel_now.swap(cancels);
      stop = stopping;
      finish_all = finish_on_stop;
    }
    const auto now = Clock::now();
    auto sweep = [&](auto& list) {
      for (auto& p : list) {
        Seq& s = *p;
        if (s.done) continue;
        if (std::find(cancel_now.begin(), cancel_now.end(), s.id) != cancel_now.end())
          abort(s, AbortReason::Cancelled, "cancelled");
        else if (now > s.req.deadline)
          abort(s, AbortReason::Timeout, "request timed out");
        else if (stop && !finish_all)
          abort(s, AbortReason::Shutdown, "the server is shutting down");
      }
    };
    sweep(running);
    sweep(waiting);
    remove_finished();
    if (stop && running.empty() && waiting.empty()) {
      publish_counts();
      return;
    }
    admit();
    publish_counts();
    if (running.empty()) {
      if (!waiting.empty()) {
        // The head of the queue cannot fit even with nothing running: it never will.
        abort(*waiting.front(), AbortReason::NoRoom, "the request does not fit in the KV cache");
        remove_finished();
      }
      continue;
    }
    const bool has_prefill =
        std::any_of(running.begin(), running.end(), [](auto& s) { return s->in_prefill(); });
    const bool has_decode =
        std::any_of(running.begin(), running.end(), [](auto& s) { return !s->in_prefill(); });
    in_step.clear();
    try {
      if (has_prefill && (!has_decode || !last_was_prefill)) {
        prefill_step();
        last_was_prefill = true;
      } else {
        decode_step();
        last_was_prefill = false;
      }
    } catch (const std::exception& e) {
      // A failed step fails the requests in it, not the server nor the others (all of them if it
      // failed before its batch was formed).
      if (in_step.empty())
        for (auto& p : running) in_step.push_back(p.get());
      const AbortReason why =
          prefill_ex->health().failed || (decode_ex && decode_ex->health().failed)
              ? AbortReason::Unavailable
              : AbortReason::EngineError;
      for (Seq* s : in_step)
        if (!s->done) abort(*s, why, std::string("engine error: ") + e.what());
    }
    remove_finished();
    publish_counts();
  }
}

}  // namespace sandwich::engine
