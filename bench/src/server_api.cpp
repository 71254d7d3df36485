#include "bench/server_api.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace sandwich::bench {

using json = nlohmann::json;

namespace {

std::optional<int> positive_int(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() <= 0) return std::nullopt;
  return static_cast<int>(std::min<int64_t>(it->get<int64_t>(), 1 << 30));
}

std::vector<int> token_list(const json& j) {
  if (!j.is_object() || !j.contains("tokens") || !j["tokens"].is_array())
    throw std::runtime_error("no 'tokens' list in the answer");
  std::vector<int> ids;
  for (const auto& t : j["tokens"]) {
    if (!t.is_number_integer())
      throw std::runtime_error("'tokens' holds something other than integers");
    ids.push_back(t.get<int>());
  }
  return ids;
}

}  // namespace

ServerInfo probe_server(HttpClient& client, const Url& url, const std::string& bearer,
                        double timeout_s) {
  ServerInfo info;
  const HttpEnd models = client.request(url, "GET", "/v1/models", {}, timeout_s, bearer);
  if (!models.error_kind.empty()) {
    info.error = models.message;
    return info;
  }
  if (models.status != 200) {
    info.error = "GET /v1/models: HTTP " + std::to_string(models.status);
  } else {
    const json j = json::parse(models.body, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("data") && j["data"].is_array() &&
        !j["data"].empty()) {
      const json& m = j["data"][0];
      if (m.is_object() && m.contains("id") && m["id"].is_string())
        info.model = m["id"].get<std::string>();
      info.max_model_len = positive_int(m, "max_model_len");
    } else {
      info.error = "GET /v1/models: no models listed";
    }
  }
  if (!info.max_model_len) {
    const HttpEnd props = client.request(url, "GET", "/props", {}, timeout_s, bearer);
    if (props.error_kind.empty() && props.status == 200) {
      const json j = json::parse(props.body, nullptr, false);
      if (!j.is_discarded() && j.is_object()) {
        if (j.contains("default_generation_settings"))
          info.max_model_len = positive_int(j["default_generation_settings"], "n_ctx");
        if (!info.max_model_len) info.max_model_len = positive_int(j, "n_ctx");
      }
    }
  }
  return info;
}

RemoteTokenizer::RemoteTokenizer(HttpClient& client, Url url, std::string model, Api api,
                                 std::string bearer, double timeout_s)
    : client_(client),
      url_(std::move(url)),
      model_(std::move(model)),
      api_(api),
      bearer_(std::move(bearer)),
      timeout_s_(timeout_s) {}

std::string RemoteTokenizer::post(const std::string& path, const std::string& body) {
  const HttpEnd e = client_.request(url_, "POST", path, body, timeout_s_, bearer_);
  if (!e.error_kind.empty())
    throw std::runtime_error("POST " + url_.str() + path + ": " + e.message);
  if (e.status != 200)
    throw std::runtime_error("POST " + url_.str() + path + ": HTTP " + std::to_string(e.status) +
                             " " + e.body.substr(0, 200));
  return e.body;
}

TokenizerStyle RemoteTokenizer::probe() {
  for (TokenizerStyle s : {TokenizerStyle::Vllm, TokenizerStyle::LlamaCpp}) {
    style_ = s;
    try {
      const std::vector<int> ids = tokenize("Hello world", false);
      if (ids.empty()) continue;  // llama.cpp answers vLLM's body with an empty list
      detokenize(ids);
      if (api_ == Api::Chat && s == TokenizerStyle::Vllm) {
        chat_template_counted_ = true;
        try {
          count_prompt("Hello world");
        } catch (const std::exception&) {
          chat_template_counted_ = false;
        }
      }
      return s;
    } catch (const std::exception&) {
    }
  }
  style_ = TokenizerStyle::None;
  return style_;
}

std::vector<int> RemoteTokenizer::tokenize(const std::string& text, bool add_special) {
  json req;
  if (style_ == TokenizerStyle::Vllm) {
    if (!model_.empty()) req["model"] = model_;
    req["prompt"] = text;
    req["add_special_tokens"] = add_special;
  } else if (style_ == TokenizerStyle::LlamaCpp) {
    req["content"] = text;
    req["add_special"] = add_special;
  } else {
    throw std::runtime_error("the server has no tokenizer route");
  }
  const json j = json::parse(post("/tokenize", req.dump()), nullptr, false);
  return token_list(j);
}

std::string RemoteTokenizer::detokenize(const std::vector<int>& ids) {
  json req = {{"tokens", ids}};
  if (style_ == TokenizerStyle::Vllm && !model_.empty()) req["model"] = model_;
  const json j = json::parse(post("/detokenize", req.dump()), nullptr, false);
  const char* key = style_ == TokenizerStyle::Vllm ? "prompt" : "content";
  if (j.is_discarded() || !j.is_object() || !j.contains(key) || !j[key].is_string())
    throw std::runtime_error(std::string("no '") + key + "' string in the /detokenize answer");
  return j[key].get<std::string>();
}

int RemoteTokenizer::count_prompt(const std::string& text) {
  if (!chat_template_counted_) return static_cast<int>(tokenize(text, true).size());
  json req = {{"messages", json::array({{{"role", "user"}, {"content", text}}})},
              {"add_generation_prompt", true}};
  if (!model_.empty()) req["model"] = model_;
  const json j = json::parse(post("/tokenize", req.dump()), nullptr, false);
  if (auto c = positive_int(j, "count")) return *c;
  return static_cast<int>(token_list(j).size());
}

}  // namespace sandwich::bench
