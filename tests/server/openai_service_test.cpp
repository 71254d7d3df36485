// The service before a model is attached (sandwichd listens while it loads): the routes that
// need no model, answered as they will be once it is ready.
#include "server/openai_service.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sandwich::server {
namespace {

using json = nlohmann::json;

// Keeps the whole reply; a loading service never streams.
class Recorder final : public Responder {
 public:
  void reply(HttpResponse r) override { response = std::move(r); }
  void start_stream(int, const std::string&) override { ADD_FAILURE() << "a stream"; }
  void send(std::string) override {}
  void end() override {}
  void on_disconnect(std::function<void()>) override {}
  bool disconnected() const override { return false; }
  HttpResponse response;
};

HttpResponse get(OpenAiService& s, const std::string& path) {
  HttpRequest req;
  req.method = "GET";
  req.target = req.path = path;
  auto out = std::make_shared<Recorder>();
  s.handle(req, out);
  return out->response;
}

TEST(OpenAiServiceLoading, TheListIsEmptyAndRetrieveSaysRetryUntilTheModelIsAttached) {
  ServiceOptions o;
  o.served_model_name = "org/m";
  o.preprocess_threads = 1;
  OpenAiService s(o);
  const HttpResponse list = get(s, "/v1/models");
  EXPECT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(json::parse(list.body)["data"], json::array()) << list.body;
  // Not 404: the model will be there, and a client should retry rather than give up.
  const HttpResponse one = get(s, "/v1/models/org/m");
  EXPECT_EQ(one.status, 503) << one.body;
  EXPECT_NE(json::parse(one.body)["error"]["message"].get<std::string>().find("still loading"),
            std::string::npos)
      << one.body;
}

}  // namespace
}  // namespace sandwich::server
