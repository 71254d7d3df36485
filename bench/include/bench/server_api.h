#pragma once
// What the benchmark asks a server before a run: its model id and context length, and its
// tokenizer through /tokenize and /detokenize, in vLLM's style ({"model","prompt"} ->
// {"tokens","count"}; {"model","tokens"} -> {"prompt"}) or llama.cpp's ({"content"} ->
// {"tokens"}; {"tokens"} -> {"content"}).
#include <optional>
#include <string>
#include <vector>

#include "bench/http_client.h"
#include "bench/openai_client.h"
#include "bench/prompts.h"
#include "common/enum_names.h"

namespace sandwich::bench {

struct ServerInfo {
  std::string model;  // first id of GET /v1/models ("" if unknown)
  std::optional<int>
      max_model_len;  // vLLM/sandwichd: /v1/models max_model_len; llama.cpp: /props n_ctx
  std::string error;  // why /v1/models gave nothing, if it did not
};
ServerInfo probe_server(HttpClient& client, const Url& url, const std::string& bearer,
                        double timeout_s);

enum class TokenizerStyle { None, Vllm, LlamaCpp };
inline constexpr EnumName<TokenizerStyle> kTokenizerStyleNames[] = {
    {TokenizerStyle::None, "none"},
    {TokenizerStyle::Vllm, "vllm"},
    {TokenizerStyle::LlamaCpp, "llama.cpp"}};

class RemoteTokenizer : public TokenizerApi {
 public:
  RemoteTokenizer(HttpClient& client, Url url, std::string model, Api api, std::string bearer,
                  double timeout_s);
  // Tries vLLM's style, then llama.cpp's; None when neither tokenizes and detokenizes a test
  // string. Must be called before the other methods.
  TokenizerStyle probe();
  TokenizerStyle style() const { return style_; }
  std::vector<int> tokenize(const std::string& text, bool add_special) override;
  std::string detokenize(const std::vector<int>& ids) override;
  // Chat with vLLM's style counts the templated conversation (POST /tokenize with messages);
  // otherwise the text alone.
  int count_prompt(const std::string& text) override;
  bool counts_template() const { return chat_template_counted_; }

 private:
  std::string post(const std::string& path, const std::string& body);
  HttpClient& client_;
  Url url_;
  std::string model_;
  Api api_;
  std::string bearer_;
  double timeout_s_;
  TokenizerStyle style_ = TokenizerStyle::None;
  bool chat_template_counted_ = false;
};

}  // namespace sandwich::bench
