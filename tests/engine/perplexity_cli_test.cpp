// sandwich-perplexity as a user runs it: PPL like llama-perplexity's, a base file and the KL
// divergence of quantizations against it, and one line for every kind of bad input. Also
// sandwich-generate --logprobs, which the greedy comparison with llama.cpp reads margins from.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>

#include "command.h"
#include "engine/scoring/perplexity.h"
#include "model_fixtures.h"
#include "quant_files.h"
#include "runtime/forward.h"

namespace sandwich::engine {
namespace {

using test::CommandResult;
using test::expect_one_line_error;
using test::TempDir;

std::string bin(const char* name) {
  return (test::bin_dir() / name).string();
}
std::string stories_file(const char* name) {
  return (test::stories_dir() / name).string();
}
std::string text() {
  return stories_file("expected_greedy_200.txt");
}
// stories260K as llama2.c files, or any other model file with the same vocabulary.
std::string perplexity(const std::string& model = "") {
  return bin("sandwich-perplexity") + " -t 2 -m " +
         (model.empty()
              ? stories_file("stories260K.bin") + " --tokenizer " + stories_file("tok512.bin")
              : model);
}

// The number after `label` in the output (NaN if absent).
double number_after(const std::string& out, const std::string& label) {
  const size_t at = out.find(label);
  if (at == std::string::npos) return NAN;
  return std::strtod(out.c_str() + at + label.size(), nullptr);
}

std::string quantize(const TempDir& dir, const std::string& type) {
  const std::string out = (dir / ("stories-" + type + ".gguf")).string();
  const CommandResult r =
      test::run_command(bin("sandwich-model") + " quantize -q " + stories_file("stories260K.bin") +
                        " " + out + " " + type + " --tokenizer " + stories_file("tok512.bin"));
  EXPECT_EQ(r.code, 0) << r.err;
  return out;
}

// The PPL the tool prints over stories260K's reference text, against one computed here with
// the reference forward pass (f32 weights, double sums) over the same chunks.
TEST(PerplexityCli, PplMatchesTheReferenceForwardPass) {
  SANDWICH_REQUIRE_DATA();
  const CommandResult r =
      test::run_command(perplexity() + " -f " + text() + " -c 64 --kv-cache-dtype f32 -b 40");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(^\[1\][0-9.]+,\[2\][0-9.]+,\[3\][0-9.]+,)")))
      << r.out;
  const double ppl = number_after(r.out, "Final estimate: PPL = ");
  ASSERT_TRUE(std::isfinite(ppl)) << r.out;
  EXPECT_GT(number_after(r.out, " +/- "), 0) << r.out;
  EXPECT_NE(r.err.find("calculating over 3 chunks, n_ctx=64, batch_size=40"), std::string::npos)
      << r.err;

  LoadOptions o;
  o.model = stories_file("stories260K.bin");
  o.tokenizer = stories_file("tok512.bin");
  const auto m = load_model(o);
  const auto tokens = m->tokenizer->encode(test::slurp(text()), true);
  double nll = 0;
  int64_t n = 0;
  for (int64_t c = 0; c < static_cast<int64_t>(tokens.size()) / 64; ++c) {
    const auto chunk = scoring_chunk(tokens, 64, c, m->tokenizer->bos_id());
    ReferenceForward ref(*m);
    for (int p = 0; p + 1 < 64; ++p) {
      const std::vector<float> l = ref.step(chunk[p]);
      if (p < scored_first(64)) continue;
      double mx = l[0], z = 0;
      for (float x : l) mx = std::max(mx, static_cast<double>(x));
      for (float x : l) z += std::exp(x - mx);
      nll -= l[chunk[p + 1]] - mx - std::log(z);
      ++n;
    }
  }
  const double want = std::exp(nll / static_cast<double>(n));
  EXPECT_NEAR(ppl, want, 1e-3 * want) << r.out;  // the tool prints 4 decimals
}

// A model against its own base: KL divergence 0, the same top token everywhere; quantizations
// of it: Q8_0 closer to the base than Q4_0, neither equal to it. The base comes from the
// llama2.c files, the quantizations are GGUF files with the vocabulary written into them.
TEST(PerplexityCli, KlDivergenceIsZeroForItselfAndGrowsAsBitsShrink) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  const std::string base = (dir / "base.kld").string();
  const CommandResult w =
      test::run_command(perplexity() + " -f " + text() + " -c 64 --kl-divergence-base " + base);
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_NE(w.err.find("saving the log-probabilities to " + base), std::string::npos) << w.err;
  const double base_ppl = number_after(w.out, "Final estimate: PPL = ");

  const CommandResult self =
      test::run_command(perplexity() + " --kl-divergence --kl-divergence-base " + base);
  ASSERT_EQ(self.code, 0) << self.err;
  EXPECT_EQ(number_after(self.out, "Mean    KLD: "), 0.0) << self.out;
  EXPECT_EQ(number_after(self.out, "Maximum KLD: "), 0.0) << self.out;
  EXPECT_EQ(number_after(self.out, "Same top p: "), 100.0) << self.out;
  EXPECT_EQ(number_after(self.out, "RMS Δp    : "), 0.0) << self.out;
  EXPECT_NEAR(number_after(self.out, "Mean PPL(base)                : "), base_ppl,
              1e-4 * base_ppl);
  EXPECT_NE(self.out.find("chunk             PPL"), std::string::npos) << self.out;

  std::map<std::string, double> kld;
  for (const std::string type : {"q8_0", "q4_0"}) {
    const CommandResult r =
        test::run_command(perplexity(quantize(dir, type)) +
                          " --kl-divergence --kl-divergence-base " + base + " -f " + text());
    ASSERT_EQ(r.code, 0) << r.err;
    kld[type] = number_after(r.out, "Mean    KLD: ");
    EXPECT_LE(number_after(r.out, "Same top p: "), 100.0) << r.out;
    EXPECT_GE(number_after(r.out, "Same top p: "), 80.0) << r.out;
    EXPECT_GT(number_after(r.out, "Maximum KLD: "), kld[type]) << r.out;
  }
  EXPECT_GT(kld["q8_0"], 0.0);
  EXPECT_LT(kld["q8_0"], kld["q4_0"]);
  EXPECT_LT(kld["q4_0"], 0.1);
}

TEST(PerplexityCli, BadInputIsOneLine) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  expect_one_line_error(test::run_command(perplexity() + " -f " + (dir / "none.txt").string()),
                        "none.txt: no such file");
  expect_one_line_error(test::run_command(perplexity()), "-f FILE (the text to score) is required");
  // 200 tokens of text are not one chunk of 512 (the model's whole context).
  expect_one_line_error(test::run_command(perplexity() + " -f " + text() + " -c 512"),
                        "tokens, fewer than one chunk of --ctx-size 512");
  expect_one_line_error(test::run_command(perplexity() + " -f " + text() + " -c 1024"),
                        "--ctx-size 1024 is larger than the model's context (512 tokens)");
  expect_one_line_error(test::run_command(perplexity() + " -f " + text() + " -c 2"),
                        "--ctx-size must be at least 4");
  expect_one_line_error(test::run_command(perplexity() + " -f " + text() + " --kl-divergence"),
                        "--kl-divergence needs --kl-divergence-base FILE");
  expect_one_line_error(test::run_command(perplexity() + " --kl-divergence --kl-divergence-base " +
                                          (dir / "none.kld").string()),
                        "none.kld: no such file (write it first");
  expect_one_line_error(
      test::run_command(perplexity() + " --kl-divergence --kl-divergence-base " + text()),
      "not a KL-divergence base file");

  // A base of another model (another vocabulary), and one of another context size.
  test::tiny_quant_config(dir);
  const std::string tiny = (dir / "tiny.gguf").string();
  ASSERT_EQ(
      test::run_command(bin("sandwich-model") + " make --preset " +
                        (dir / "tiny-config/config.json").string() + " --dtype f32 -o " + tiny)
          .code,
      0);
  const std::string tiny_base = (dir / "tiny.kld").string();
  const CommandResult w = test::run_command(perplexity(tiny) + " -f " + text() +
                                            " -c 32 --kl-divergence-base " + tiny_base);
  ASSERT_EQ(w.code, 0) << w.err;
  expect_one_line_error(
      test::run_command(perplexity() + " --kl-divergence --kl-divergence-base " + tiny_base),
      "has a vocabulary of 320 tokens, this model 512; compare versions of one model");
  expect_one_line_error(
      test::run_command(perplexity(tiny) + " --kl-divergence --kl-divergence-base " + tiny_base +
                        " -c 16"),
      "was computed with --ctx-size 32, not 16");
  expect_one_line_error(
      test::run_command(perplexity(tiny) + " --kl-divergence --kl-divergence-base " + tiny_base +
                        " -f " + stories_file("REFERENCE.md")),
      "does not tokenize to the text of");
}

// --logprobs N: each generated token's logprob and the top N, one line each on stderr; the
// greedy pick is the top one, so the margin to the runner-up is what separates it.
TEST(PerplexityCli, GenerateLogprobsGiveTheGreedyMargins) {
  SANDWICH_REQUIRE_DATA();
  const CommandResult r = test::run_command(
      bin("sandwich-generate") + " -q -m " + stories_file("stories260K.bin") + " --tokenizer " +
      stories_file("tok512.bin") + " -n 12 --temp 0 --output-ids --logprobs 2 -t 2");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream ids(r.out);
  const std::vector<int> got{std::istream_iterator<int>(ids), std::istream_iterator<int>()};
  ASSERT_EQ(got.size(), 12u) << r.out;
  std::istringstream lines(r.err);
  std::string line;
  size_t i = 0;
  for (; std::getline(lines, line); ++i) {
    std::istringstream f(line);
    std::string word, index, top;
    int id = 0, top1 = 0, top2 = 0;
    double lp = 0, lp1 = 0, lp2 = 0;
    f >> word >> index >> id >> lp >> top >> top1 >> lp1 >> top2 >> lp2;
    ASSERT_FALSE(f.fail()) << line;
    EXPECT_EQ(word + " " + index, "logprob " + std::to_string(i) + ":");
    ASSERT_LT(i, got.size());
    EXPECT_EQ(id, got[i]);
    EXPECT_EQ(top1, got[i]);
    EXPECT_EQ(lp, lp1);
    EXPECT_GE(lp1, lp2);
    EXPECT_LE(lp1, 0.0);
  }
  EXPECT_EQ(i, 12u) << r.err;
}

}  // namespace
}  // namespace sandwich::engine
