#include "bench/dataset.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>
#include <stdexcept>

#include "common/paths.h"

namespace sandwich::bench {

std::string DatasetSpec::describe() const {
  switch (kind) {
    case Kind::ShareGpt:
      return "sharegpt";
    case Kind::Lmsys:
      return "lmsys (model: geometric lengths, means 69.5 / 214.5)";
    case Kind::Fixed:
      return "fixed:" + std::to_string(fixed_input) + "," + std::to_string(fixed_output);
    case Kind::Csv:
      return "csv:" + path;
  }
  return "?";
}

DatasetSpec parse_dataset_spec(const std::string& text) {
  DatasetSpec d;
  if (text == "sharegpt") return d;
  if (text == "lmsys") {
    d.kind = DatasetSpec::Kind::Lmsys;
    return d;
  }
  if (text.rfind("fixed:", 0) == 0) {
    const std::string v = text.substr(6);
    const size_t comma = v.find(',');
    if (comma == std::string::npos)
      throw std::invalid_argument("--dataset fixed:IN,OUT needs two lengths, got '" + text + "'");
    d.kind = DatasetSpec::Kind::Fixed;
    d.fixed_input = parse_length(v.substr(0, comma), "fixed input length");
    d.fixed_output = parse_length(v.substr(comma + 1), "fixed output length");
    return d;
  }
  if (text.rfind("csv:", 0) == 0 && text.size() > 4) {
    d.kind = DatasetSpec::Kind::Csv;
    d.path = text.substr(4);
    return d;
  }
  throw std::invalid_argument("--dataset must be sharegpt, lmsys, fixed:IN,OUT or csv:PATH, not '" +
                              text + "'");
}

std::vector<LengthPair> sample_lengths(const DatasetSpec& spec, int n, uint64_t seed,
                                       int max_model_len, const std::string& sharegpt_path) {
  if (n < 1) throw std::invalid_argument("--num-prompts must be >= 1");
  if (max_model_len < 2) throw std::invalid_argument("the max model length must be >= 2");
  const std::string ctx = "the max model length " + std::to_string(max_model_len);
  std::vector<LengthPair> out;
  out.reserve(static_cast<size_t>(n));
  switch (spec.kind) {
    case DatasetSpec::Kind::Fixed:
      if (spec.fixed_input + spec.fixed_output > max_model_len)
        throw std::invalid_argument("fixed lengths " + std::to_string(spec.fixed_input) + " + " +
                                    std::to_string(spec.fixed_output) + " exceed " + ctx);
      out.assign(static_cast<size_t>(n), {spec.fixed_input, spec.fixed_output});
      return out;
    case DatasetSpec::Kind::Csv: {
      const auto rows = read_length_trace(spec.path);
      for (size_t i = 0; i < rows.size(); ++i)
        if (rows[i].input + rows[i].output > max_model_len)
          throw std::invalid_argument(spec.path + ": pair " + std::to_string(i + 1) + " (" +
                                      std::to_string(rows[i].input) + " + " +
                                      std::to_string(rows[i].output) + " tokens) exceeds " + ctx);
      for (int i = 0; i < n; ++i) out.push_back(rows[static_cast<size_t>(i) % rows.size()]);
      return out;
    }
    case DatasetSpec::Kind::Lmsys:
      return lmsys_lengths(n, seed, max_model_len);
    case DatasetSpec::Kind::ShareGpt: {
      const auto rows = read_length_trace(
          sharegpt_path.empty() ? default_length_trace() : std::filesystem::path(sharegpt_path));
      std::vector<size_t> order(rows.size());
      std::iota(order.begin(), order.end(), size_t{0});
      std::mt19937_64 rng(seed);
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t i : order) {
        const LengthPair& p = rows[i];
        if (p.input < 4 || p.output < 4 || p.input + p.output > max_model_len) continue;
        out.push_back(p);
        if (static_cast<int>(out.size()) == n) return out;
      }
      throw std::invalid_argument("only " + std::to_string(out.size()) + " ShareGPT pairs fit " +
                                  ctx + "; ask for fewer --num-prompts");
    }
  }
  return out;
}

}  // namespace sandwich::bench
