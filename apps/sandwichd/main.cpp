// sandwichd: the OpenAI-compatible server's command line. Its lifecycle (load, serve, drain on
// SIGTERM) is server/'s Sandwichd; the tuner's start-up search is handed to it from here, as
// server/ does not use the tuner.
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/stop_signal.h"
#include "common/tool.h"
#include "engine/pipeline/pipeline.h"
#include "engine/plans/tool_options.h"
#include "engine/runtime/executor.h"
#include "server/sandwichd.h"
#include "tuner/default_plan.h"

using namespace sandwich;
using namespace sandwich::engine;

namespace {

size_t parse_bytes(const std::string& flag, const std::string& v) {
  size_t mult = 1;
  std::string num = v;
  auto ends = [&](const char* s) {
    const size_t n = std::strlen(s);
    return num.size() > n && num.compare(num.size() - n, n, s) == 0;
  };
  for (auto [suffix, m] : {std::pair{"GiB", size_t{1} << 30},
                           {"MiB", size_t{1} << 20},
                           {"KiB", size_t{1} << 10},
                           {"G", size_t{1} << 30},
                           {"M", size_t{1} << 20},
                           {"K", size_t{1} << 10}})
    if (ends(suffix)) {
      num.resize(num.size() - std::strlen(suffix));
      mult = m;
      break;
    }
  const double d = ArgParser::parse_double(flag, num);
  if (d <= 0) throw CliError(flag + " must be positive");
  return static_cast<size_t>(d * static_cast<double>(mult));
}

// vLLM's JSON list ('["http://a", "http://b"]') or a comma-separated list.
void add_allowed_origins(const std::string& v, std::vector<std::string>& out) {
  std::string list = v;
  if (!list.empty() && list.front() == '[') {
    if (list.back() != ']') throw CliError("--allowed-origins: a JSON list must end in ']'");
    list = list.substr(1, list.size() - 2);
  }
  std::stringstream ss(list);
  for (std::string o; std::getline(ss, o, ',');) {
    const size_t b = o.find_first_not_of(" \t\""), e = o.find_last_not_of(" \t\"");
    if (b == std::string::npos) continue;
    out.push_back(o.substr(b, e - b + 1));
  }
  if (out.empty()) throw CliError("--allowed-origins needs at least one origin");
}

// What the command line gives beyond the daemon's options.
struct CommandLine {
  server::SandwichdOptions o;
  std::optional<std::string> served_name;
  LogLevel log_level = LogLevel::Info;
  std::vector<std::string> notes;  // for the log, once its level is set
};

void add_api_options(ArgParser& p, CommandLine& c) {
  server::SandwichdOptions& o = c.o;
  p.add("--served-model-name", &c.served_name, "model id in the API (default: the --model value)",
        "NAME");
  p.add("--host", &o.http.host, "address to bind (default 127.0.0.1)", "H");
  p.option("--port", "P", "port (default 8000; 0 picks a free one)", [&o](const std::string& v) {
    const int64_t port = ArgParser::parse_int("--port", v);
    if (port < 0 || port > 65535) throw CliError("--port must be 0..65535");
    o.http.port = static_cast<uint16_t>(port);
  });
  p.add("--api-key", &o.service.api_key,
        "require 'Authorization: Bearer KEY' on every route but /health and /metrics", "KEY");
  p.add_flag("--metrics-need-key", &o.service.metrics_need_key,
             "with --api-key: /metrics needs the key too");
  p.add("--chat-template", &o.service.chat_template,
        "llama3, llama2, chatml, or a Jinja template file (default: the model's own)", "T");
  p.option("--tool-call-parser", "P",
           "how the model writes tool calls, for tool_choice auto: auto (default: from the chat "
           "template, else the tokenizer), llama3_json, hermes, mistral or none",
           [&o](const std::string& v) {
             const auto f = value_named(v, server::kToolCallFormatNames);
             if (!f)
               throw CliError("--tool-call-parser must be " +
                              names_of(server::kToolCallFormatNames) + ", got '" + v + "'");
             o.service.tool_call_parser = *f;
           });
  // What vLLM and llama-server need for tool calls, which this server does by default.
  p.flag("--enable-auto-tool-choice",
         "accepted, as vLLM's: tool_choice auto works whenever the tool-call format is known "
         "(--tool-call-parser)",
         [] {});
  p.flag("--jinja", "accepted, as llama-server's: chat templates are always rendered as Jinja",
         [] {});
  p.option("--pooling", "P",
           "how /v1/embeddings pools the final hidden states: mean (default) or last",
           [&o](const std::string& v) {
             const auto pooling = value_named(v, engine::kPoolingNames);
             if (!pooling)
               throw CliError("--pooling must be " + names_of(engine::kPoolingNames) + ", got '" +
                              v + "'");
             o.service.pooling = *pooling;
           });
  p.flag("--embeddings,--embedding", "accepted as llama-server's: /v1/embeddings is always served",
         [] {});
}

void add_scheduler_options(ArgParser& p, server::SandwichdOptions& o) {
  SchedulerOptions& sched = o.scheduler;
  p.add("-c,--ctx-size,--max-model-len", &sched.max_model_len,
        "prompt + output limit (default: the model's context)");
  // llama-server's names for the same limits: its slots are our running sequences, its logical
  // batch the prompt tokens one step takes.
  p.add("-np,--parallel,--max-num-seqs", &sched.max_num_seqs,
        "running sequences at most (default 64)");
  p.add("-b,--batch-size,--max-num-batched-tokens", &sched.max_batched_tokens,
        "prompt tokens per prefill step (default 512)");
  p.option("--kv-cache-memory", "BYTES",
           "KV-cache size, e.g. 2GiB (default: max-num-seqs full sequences, at most 4 GiB)",
           [&sched](const std::string& v) {
             sched.kv_cache_bytes = parse_bytes("--kv-cache-memory", v);
           });
  add_kv_cache_dtype_option(p, sched.kv_cache_dtype);
  p.flag("--no-prefix-caching", "do not reuse the KV blocks of prompts' shared prefixes",
         [&sched] { sched.enable_prefix_caching = false; });
  p.flag("--enable-prefix-caching", "reuse the KV blocks of shared prefixes (the default)",
         [&sched] { sched.enable_prefix_caching = true; });
  p.add("--max-waiting", &sched.max_waiting,
        "waiting-queue bound; beyond it requests get 429 (default 256)");
  add_plan_options(p, o.plan);
  p.add("--rank-step-timeout", &sched.rank_step_timeout_seconds,
        "seconds a step of a multi-rank plan may take before its ranks count as hung and are "
        "replaced (default 300)");
}

void add_connection_options(ArgParser& p, server::SandwichdOptions& o) {
  server::HttpServerOptions& http = o.http;
  p.add("--io-threads", &http.io_threads, "HTTP I/O threads (default 1)");
  p.option(
      "--max-body-bytes", "N",
      "request body limit; a larger body gets 413 (default 32MiB: an 8 MiB prompt with "
      "JSON's escapes fits)",
      [&http](const std::string& v) { http.max_body_bytes = parse_bytes("--max-body-bytes", v); });
  p.option("--max-prompt-bytes", "N",
           "prompt text one request may send, checked before tokenizing (completions: its "
           "prompts together; chat: the message contents and the rendered prompt); more gets 400 "
           "(default 16MiB). A prompt over the context is refused after that, most without "
           "being tokenized",
           [&o](const std::string& v) {
             o.service.max_prompt_bytes = parse_bytes("--max-prompt-bytes", v);
           });
  p.add("--preprocess-threads", &o.service.preprocess_threads,
        "workers that parse request bodies, render chat templates and tokenize, at a lower "
        "priority than the engine, never on the I/O threads (default: cores / 8, within 2..8)");
  p.add("--preprocess-queue", &o.service.preprocess_queue,
        "requests waiting for a preprocessing worker at most; beyond it 429 (default 64)");
  p.add("--max-connections", &http.max_connections,
        "open connections at most (default 256); a few more are kept for /health and /metrics");
  p.add("--max-connections-per-client", &http.max_connections_per_client,
        "open connections one client address may hold (default: half of --max-connections; "
        "raise it behind a reverse proxy)");
  p.add("--header-timeout", &http.header_timeout_seconds,
        "seconds a request's whole head may take to arrive (default 10)", "S");
  p.add("--body-timeout", &http.body_timeout_seconds,
        "seconds a request's whole body may take after its head (default 30)", "S");
  p.add("--keep-alive-timeout", &http.keep_alive_timeout_seconds,
        "seconds an idle keep-alive connection stays open (default 5, as vLLM's)", "S");
  p.add("--write-timeout", &http.write_timeout_seconds,
        "seconds a write to a client may make no progress before its request is aborted "
        "(default 30)",
        "S");
  p.option("--max-send-buffer", "BYTES",
           "answer bytes one connection may have waiting to be written before its request is "
           "aborted (default 1MiB)",
           [&http](const std::string& v) {
             http.max_send_buffer_bytes = parse_bytes("--max-send-buffer", v);
           });
  p.add("--request-timeout", &o.service.request_timeout_seconds,
        "seconds a request may run (default 600)");
  p.add("--shutdown-timeout", &o.shutdown_timeout_seconds,
        "seconds running requests get to finish on SIGTERM (default 30)");
  p.repeatable("--allowed-origins", "ORIGINS",
               "CORS: browser origins allowed to call the API, comma-separated or a JSON list "
               "(e.g. http://localhost:3000, or * for any; default: none, CORS off)",
               [&http](const std::string& v) { add_allowed_origins(v, http.allowed_origins); });
}

void add_log_options(ArgParser& p, CommandLine& c) {
  p.option("--log-level", "L", "debug, info (default), warning or error",
           [&c](const std::string& v) {
             const auto l = log_level_named(v);
             if (!l)
               throw CliError("--log-level must be debug, info, warning or error, got '" + v + "'");
             c.log_level = *l;
           });
  p.add("--log-interval", &c.o.service.log_interval_seconds,
        "seconds between the engine's throughput lines in the log, while it works (default 10; "
        "0: none)",
        "S");
  p.flag("--disable-log-stats", "as --log-interval 0 (vLLM's name)",
         [&c] { c.o.service.log_interval_seconds = 0; });
}

// Flags of vLLM and llama-server (README, "Coming from vLLM / llama.cpp") with no counterpart
// here: accepted where they ask for what this server does anyway, else refused naming what to
// use instead, rather than met with a "did you mean" for an unrelated flag.
void add_peer_options(ArgParser& p, CommandLine& c) {
  p.flag("--metrics", "accepted, as llama-server's: /metrics is always on", [] {});
  p.option("-ngl,--n-gpu-layers,--gpu-layers", "N",
           "llama-server's GPU offload: only 0 is accepted (a CPU server)",
           [&c](const std::string& v) {
             if (v != "0")
               throw CliError("-ngl " + v +
                              ": no GPU offload; this is a CPU server (give 0, or leave it out)");
             c.notes.push_back("-ngl 0: nothing to offload; this is a CPU server");
           });
  auto refuse = [&p](const std::string& names, const std::string& metavar, const std::string& why) {
    const std::string name = names.substr(0, names.find(','));
    p.option(names, metavar, "refused: " + why,
             [name, why](const std::string&) { throw CliError(name + ": " + why); });
  };
  refuse("--lora", "F", "LoRA adapters are not supported (merge the adapter into the weights)");
  p.flag("--enable-lora", "refused: LoRA adapters are not supported", [] {
    throw CliError(
        "--enable-lora: LoRA adapters are not supported (merge the adapter into the "
        "weights)");
  });
  refuse("--gpu-memory-utilization", "X",
         "no GPU; the KV cache's size is --kv-cache-memory BYTES (e.g. 4GiB)");
  refuse("--tensor-parallel-size,-tp", "N",
         "ranks are processes on this machine's cores: --prefill-config/--decode-config RxT "
         "(R ranks of T cores), or --plan FILE from sandwich-tune");
  refuse("-ctk,--cache-type-k", "T", "the KV cache's type is --kv-cache-dtype bf16|f32");
  refuse("-ctv,--cache-type-v", "T", "the KV cache's type is --kv-cache-dtype bf16|f32");
  refuse("--uvicorn-log-level", "L", "the log's level is --log-level debug|info|warning|error");
}

// Everything the command line alone can refuse, before anything binds or loads.
void check_options(const ArgParser& p, CommandLine& c) {
  server::SandwichdOptions& o = c.o;
  const SchedulerOptions& sched = o.scheduler;
  const server::HttpServerOptions& http = o.http;
  LoadOptions& load = o.load;
  if (!p.positional().empty()) {
    if (!load.model.empty())
      throw CliError("the model is given twice: '" + p.positional()[0] + "' and --model '" +
                     load.model + "'");
    load.model = p.positional()[0];
  }
  if (load.model.empty()) throw CliError("--model is required (see --help)");
  if (!(o.service.log_interval_seconds >= 0)) throw CliError("--log-interval must not be negative");
  if (sched.max_num_seqs < 1 || sched.max_batched_tokens < 1 || sched.max_waiting < 0 ||
      http.io_threads < 1 || o.service.preprocess_threads < 0 || o.service.preprocess_queue < 1 ||
      http.max_connections < 1 || http.max_connections_per_client < 0 ||
      o.service.request_timeout_seconds < 1 || o.shutdown_timeout_seconds < 0 ||
      !(sched.rank_step_timeout_seconds > 0) || !(http.header_timeout_seconds > 0) ||
      !(http.body_timeout_seconds > 0) || !(http.keep_alive_timeout_seconds > 0) ||
      !(http.write_timeout_seconds > 0))
    throw CliError("thread counts, limits and timeouts must be positive");
  if (o.service.metrics_need_key && !o.service.api_key)
    throw CliError("--metrics-need-key needs --api-key");
  o.service.served_model_name = c.served_name.value_or(load.model);
}

// The tuner's simulator-only search, over the rank counts the weights split over (a quantized
// model's whole blocks).
Plan startup_plan_search(const Model& model, KVCacheDType kv_cache_dtype, std::string* how) {
  const auto ranks_fit = [&model](int ranks) { return rank_count_fits(model, ranks); };
  return tuner::default_plan(model.config, model.weight_dtype(), how, kv_cache_dtype,
                             model.bytes_per_weight, ranks_fit);
}

}  // namespace

int main(int argc, char** argv) {
  // From the first line: a signal while the command line is read or the model loads stops it.
  stop_on_signal("sandwichd", "starting");
  return run_tool("sandwichd", [&]() -> int {
    CommandLine c;
    ArgParser p(
        "sandwichd [MODEL]",
        "OpenAI-compatible LLM server (continuous batching, separate prefill and decode plans).\n"
        "MODEL: the model, as --model takes it.");
    add_model_options(p, c.o.load);
    p.accept_positionals(1);
    add_api_options(p, c);
    add_scheduler_options(p, c.o);
    add_pipeline_options(p, c.o.pipeline);
    add_connection_options(p, c.o);
    add_log_options(p, c);
    add_peer_options(p, c);
    if (!p.parse(argc, argv)) return 0;
    set_log_level(c.log_level);
    for (const auto& n : c.notes) log_line(LogLevel::Info, "sandwichd", n);
    check_options(p, c);
    server::Sandwichd daemon(std::move(c.o), startup_plan_search);
    return daemon.run();
  });
}
