#include "bench/runner.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace sandwich::bench {

std::vector<RequestRecord> run_requests(HttpClient& client, const RunOptions& options,
                                        const std::vector<BenchRequest>& requests,
                                        const std::vector<double>& arrivals) {
  using Clock = HttpClient::Clock;
  if (arrivals.size() != requests.size())
    throw std::invalid_argument("run_requests: one arrival time per request");
  const size_t n = requests.size();
  std::vector<RequestRecord> records(n);
  std::vector<std::unique_ptr<OpenAiStreamReader>> readers(n);
  // Bodies are built before the clock starts so JSON work never delays a release.
  std::vector<std::string> bodies(n);
  for (size_t i = 0; i < n; ++i) {
    const BenchRequest& q = requests[i];
    bodies[i] =
        openai_request_body(options.api, options.model, q.prompt, q.max_tokens, options.extra_body);
    RequestRecord& r = records[i];
    r.index = static_cast<int>(i);
    r.input_len = q.input_len;
    r.prompt_tokens = q.prompt_tokens;
    r.max_tokens = q.max_tokens;
    readers[i] = std::make_unique<OpenAiStreamReader>(r);
  }

  std::mutex mu;
  std::condition_variable cv;
  size_t in_flight = 0, finished = 0, failed = 0;
  const size_t limit =
      options.max_concurrency > 0 ? static_cast<size_t>(options.max_concurrency) : n + 1;
  const Clock::time_point t0 = Clock::now();
  auto since = [t0](Clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); };

  for (size_t i = 0; i < n; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(arrivals[i])));
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < limit; });
      ++in_flight;
    }
    RequestRecord& r = records[i];
    r.arrival_s = arrivals[i];
    r.start_s = since(Clock::now());
    OpenAiStreamReader* reader = readers[i].get();
    HttpClient::StreamHandlers h;
    h.on_body = [reader, since](std::string_view bytes, Clock::time_point at) {
      reader->on_bytes(bytes, since(at));
    };
    h.on_end = [&, i, reader, since](const HttpEnd& end, Clock::time_point at) {
      reader->on_end(end, since(at));
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      ++finished;
      failed += !records[i].ok;
      if (options.progress) options.progress({finished, failed, n, since(Clock::now())});
      cv.notify_all();
    };
    client.post_stream(options.url, api_path(options.api), std::move(bodies[i]), options.timeout_s,
                       std::move(h), options.bearer);
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return finished == n; });
  return records;
}

}  // namespace sandwich::bench
