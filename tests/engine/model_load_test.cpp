#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

#include "dummy_llama.h"
#include "engine/formats/dummy_model.h"
#include "engine/formats/model.h"
#include "engine/runtime/generator.h"
#include "error_text.h"
#include "model_fixtures.h"
#include "runtime/forward.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

using test::stories_dir;
using test::TempDir;

std::unique_ptr<Model> load(const std::filesystem::path& p,
                            std::optional<std::filesystem::path> tok = {},
                            bool require_tokenizer = true) {
  LoadOptions o;
  o.model = p.string();
  o.tokenizer = tok;
  o.require_tokenizer = require_tokenizer;
  o.threads = 2;
  return load_model(o);
}

// Logits after each token of a fixed sequence, through the fast path.
std::vector<std::vector<float>> logits_trace(const Model& m, const std::vector<int32_t>& tokens) {
  KVCache kv(m.config, KVCache::bytes_for_tokens(m.config, 64));
  kernels::ThreadTeam team(2);
  ForwardPass fp(m, kv, team);
  std::vector<int32_t> blocks;
  EXPECT_TRUE(kv.reserve(blocks, 64));
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::vector<float> l(m.config.vocab_size);
    BatchEntry e{std::span<const int32_t>(tokens).subspan(i, 1), static_cast<int32_t>(i), blocks,
                 true};
    fp.run({&e, 1}, l.data());
    out.push_back(std::move(l));
  }
  return out;
}

void expect_same_logits(const std::vector<std::vector<float>>& a,
                        const std::vector<std::vector<float>>& b, double tol,
                        const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t s = 0; s < a.size(); ++s) {
    double scale = 0;
    for (float v : b[s]) scale = std::max(scale, static_cast<double>(std::abs(v)));
    for (size_t i = 0; i < a[s].size(); ++i)
      ASSERT_NEAR(a[s][i], b[s][i], tol * scale) << what << ": step " << s << " logit " << i;
  }
}

// The sizes of a model's configuration, compared in one go (a mismatch prints both, named).
struct Sizes {
  int dim, ffn_dim, n_layers, n_heads, n_kv_heads, head_dim, vocab_size, max_seq_len;
  bool operator==(const Sizes&) const = default;
  friend std::ostream& operator<<(std::ostream& os, const Sizes& s) {
    return os << "dim " << s.dim << ", ffn " << s.ffn_dim << ", layers " << s.n_layers << ", heads "
              << s.n_heads << " (kv " << s.n_kv_heads << ", size " << s.head_dim << "), vocab "
              << s.vocab_size << ", context " << s.max_seq_len;
  }
};

Sizes sizes_of(const ModelConfig& c) {
  return {c.dim,        c.ffn_dim,  c.n_layers,   c.n_heads,
          c.n_kv_heads, c.head_dim, c.vocab_size, c.max_seq_len};
}

const std::vector<int32_t> kTokens = {1, 403, 407, 261, 378, 13, 270, 300, 290, 374, 268, 425};

// The llama2.c checkpoint's logits over kTokens: what the same weights in any format must give.
std::vector<std::vector<float>> reference_logits() {
  return logits_trace(*load(stories_dir() / "stories260K.bin", stories_dir() / "tok512.bin"),
                      kTokens);
}

TEST(ModelLoad, Llama2cCheckpointConfig) {
  SANDWICH_REQUIRE_DATA();
  auto m = load(stories_dir() / "stories260K.bin", stories_dir() / "tok512.bin");
  EXPECT_EQ(sizes_of(m->config), (Sizes{64, 172, 5, 8, 4, 8, 512, 512}));
  EXPECT_TRUE(m->config.tied_embeddings);
  EXPECT_EQ(m->weight_dtype(), WeightDType::F32);
  EXPECT_EQ(m->tokenizer->vocab_size(), 512);
}

TEST(ModelLoad, SameWeightsInEveryFormatGiveTheSameLogits) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  const auto base = reference_logits();
  test::write_stories_gguf(dir / "f32.gguf", kernels::DType::F32);
  auto gguf = load(dir / "f32.gguf");  // tokenizer from the GGUF's own vocab
  EXPECT_EQ(gguf->tokenizer->vocab_size(), 512);
  expect_same_logits(logits_trace(*gguf, kTokens), base, 1e-6, "GGUF F32");

  test::write_stories_hf(dir / "hf", kernels::DType::F32, false);
  expect_same_logits(logits_trace(*load(dir / "hf", stories_dir() / "tok512.bin"), kTokens), base,
                     1e-6, "safetensors F32");
  test::write_stories_hf(dir / "hf-sharded", kernels::DType::F32, true);
  expect_same_logits(logits_trace(*load(dir / "hf-sharded", {}, false), kTokens), base, 1e-6,
                     "sharded safetensors F32");
  expect_same_logits(logits_trace(*load(dir / "hf/model.safetensors", {}, false), kTokens), base,
                     1e-6, "safetensors file");
}

TEST(ModelLoad, HalfPrecisionFormatsStayClose) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  const auto base = reference_logits();
  for (auto dt : {kernels::DType::BF16, kernels::DType::F16}) {
    const std::string n(kernels::dtype_name(dt));
    test::write_stories_gguf(dir / (n + ".gguf"), dt);
    auto g = load(dir / (n + ".gguf"));
    EXPECT_EQ(g->weight_dtype(), WeightDType::BF16) << n;  // F16 is stored as BF16
    expect_same_logits(logits_trace(*g, kTokens), base, 0.06, "GGUF " + n);
    test::write_stories_hf(dir / ("hf-" + n), dt, true);
    auto h = load(dir / ("hf-" + n), {}, false);
    expect_same_logits(logits_trace(*h, kTokens), logits_trace(*g, kTokens), 1e-6,
                       "safetensors vs GGUF " + n);
  }
  // --dtype float32 keeps F16 exactly.
  LoadOptions o;
  o.model = (dir / "f16.gguf").string();
  o.dtype = WeightDType::F32;
  auto f = load_model(o);
  EXPECT_EQ(f->weight_dtype(), WeightDType::F32);
}

TEST(ModelLoad, DummyGgufLoadsIntoTheDummyWeights) {
  TempDir dir;
  test::write_llama_config(dir.path(), {64, 2, 4, 2, 80, 300, 128});
  LoadOptions o = test::dummy_weights(dir.path(), WeightDType::F32);
  o.seed = 5;
  auto dummy = load_model(o);
  write_dummy_gguf(dummy->config, WeightDType::F32, default_dummy_vocab(dummy->config), 5,
                   dir / "d.gguf");
  auto file = load(dir / "d.gguf");
  const std::vector<int32_t> toks = {1, 7, 99, 250, 3};
  expect_same_logits(logits_trace(*file, toks), logits_trace(*dummy, toks), 0.0, "make vs dummy");
}

TEST(ModelLoad, PresetsResolveAndExplainMissingWeights) {
  TempDir dir;
  std::optional<test::ScopedEnv> models(std::in_place, "SANDWICH_MODELS", dir.path().string());
  LoadOptions o;
  o.model = "llama-160m";
  try {
    load_model(o);
    FAIL();
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(dir.path().string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("--load-format dummy"), std::string::npos) << msg;
  }
  o.model = "no-such-model";
  EXPECT_THROW(load_model(o), std::runtime_error);
  o.load_format = LoadFormat::Dummy;
  EXPECT_THROW(load_model(o), std::runtime_error);
  models.reset();
  const ModelConfig c = load_preset("llama3-8b");
  EXPECT_EQ(sizes_of(c), (Sizes{4096, 14336, 32, 32, 8, 128, 128256, 8192}));
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.0f);
  EXPECT_EQ(load_preset("llama-1.3b").ffn_dim, 5504);
  EXPECT_EQ(load_preset("llama-160m").n_heads, 12);
}

TEST(ModelLoad, Llama3RopeScalingFollowsMetasRule) {
  ModelConfig c = load_preset("llama3-8b");
  c.rope_scaling.type = RopeScaling::Type::Llama3;
  c.rope_scaling.factor = 8;
  c.rope_scaling.low_freq_factor = 1;
  c.rope_scaling.high_freq_factor = 4;
  c.rope_scaling.original_max_position = 8192;
  auto scaled = rope_inv_freq(c);
  c.rope_scaling.type = RopeScaling::Type::None;
  auto plain = rope_inv_freq(c);
  EXPECT_DOUBLE_EQ(scaled[0], plain[0]);              // high frequency: kept
  EXPECT_DOUBLE_EQ(scaled.back(), plain.back() / 8);  // lowest frequency: divided by the factor
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_LE(scaled[i], plain[i]);
    EXPECT_GE(scaled[i], plain[i] / 8 - 1e-18);
  }
}

// ---- bad input: one clear error, never a crash --------------------------------------------

std::string load_error(const std::filesystem::path& p,
                       std::optional<std::filesystem::path> tok = {}) {
  return test::error_text([&] { load(p, tok); });
}

void copy_prefix(const std::filesystem::path& from, const std::filesystem::path& to,
                 int64_t cut_from_end) {
  std::ifstream in(from, std::ios::binary);
  std::vector<char> b{std::istreambuf_iterator<char>(in), {}};
  b.resize(static_cast<size_t>(static_cast<int64_t>(b.size()) - cut_from_end));
  std::ofstream(to, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
}

TEST(ModelLoadErrors, TruncatedFiles) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  copy_prefix(stories_dir() / "stories260K.bin", dir / "cut.bin", 1000);
  EXPECT_NE(load_error(dir / "cut.bin", stories_dir() / "tok512.bin").find("truncated"),
            std::string::npos);
  test::write_stories_gguf(dir / "m.gguf", kernels::DType::F32);
  copy_prefix(dir / "m.gguf", dir / "cut.gguf", 5000);
  EXPECT_NE(load_error(dir / "cut.gguf").find("truncated"), std::string::npos);
  test::write_stories_hf(dir / "hf", kernels::DType::F32, false);
  copy_prefix(dir / "hf/model.safetensors", dir / "hf/cut", 100);
  std::filesystem::rename(dir / "hf/cut", dir / "hf/model.safetensors");
  EXPECT_NE(load_error(dir / "hf", stories_dir() / "tok512.bin").find("truncated"),
            std::string::npos);
}

TEST(ModelLoadErrors, WrongMagicAndGarbage) {
  TempDir dir;
  std::ofstream(dir / "garbage.gguf") << "this is not a model file at all, just text";
  EXPECT_NE(load_error(dir / "garbage.gguf").find("bad magic"), std::string::npos);
  std::ofstream(dir / "garbage.bin") << std::string(4000, 'x');
  EXPECT_NE(load_error(dir / "garbage.bin").find("llama2.c"), std::string::npos);
  std::ofstream(dir / "tiny") << "ab";
  EXPECT_NE(load_error(dir / "tiny"), "");
  std::filesystem::create_directories(dir / "empty-folder");
  EXPECT_NE(load_error(dir / "empty-folder").find("config.json"), std::string::npos);
}

// The header of a one-layer GGUF model (dim 32, FFN 48, 2 heads, 64 positions, `vocab` tokens,
// no tokenizer), the keys of `overrides` replacing or added to it; no tensors yet.
gguf::Writer tiny_gguf(const std::string& arch, uint32_t vocab,
                       const std::vector<std::pair<std::string, gguf::Value>>& overrides = {}) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::of_string(arch));
  for (auto [k, v] : std::vector<std::pair<const char*, uint32_t>>{{"context_length", 64},
                                                                   {"embedding_length", 32},
                                                                   {"block_count", 1},
                                                                   {"feed_forward_length", 48},
                                                                   {"attention.head_count", 2},
                                                                   {"vocab_size", vocab}})
    w.set(arch + "." + k, gguf::Value::of_u32(v));
  for (const auto& [k, v] : overrides) w.set(k, v);
  return w;
}

void add_zero_tensor(gguf::Writer& w, const std::string& name, uint32_t type,
                     std::vector<uint64_t> dims) {
  w.add_tensor(name, type, std::move(dims), [](uint8_t* d, uint64_t n) { std::memset(d, 0, n); });
}

// The tensors of tiny_gguf's model, all zero, for `layers` layers; layer 0's attn_q may be of
// another type and shape.
void add_tiny_tensors(gguf::Writer& w, uint64_t vocab, int layers, uint32_t q_type = 0,
                      uint64_t q_rows = 32) {
  add_zero_tensor(w, "token_embd.weight", 0, {32, vocab});
  add_zero_tensor(w, "output_norm.weight", 0, {32});
  for (int l = 0; l < layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add_zero_tensor(w, b + "attn_norm.weight", 0, {32});
    add_zero_tensor(w, b + "ffn_norm.weight", 0, {32});
    add_zero_tensor(w, b + "attn_q.weight", l == 0 ? q_type : 0, {32, l == 0 ? q_rows : 32});
    for (const char* t : {"attn_k", "attn_v", "attn_output"})
      add_zero_tensor(w, b + t + ".weight", 0, {32, 32});
    add_zero_tensor(w, b + "ffn_gate.weight", 0, {32, 48});
    add_zero_tensor(w, b + "ffn_up.weight", 0, {32, 48});
    add_zero_tensor(w, b + "ffn_down.weight", 0, {48, 32});
  }
}

// A GGUF with one thing wrong, written with the real writer.
std::filesystem::path bad_gguf(const TempDir& dir, const std::string& arch, uint32_t q_type,
                               uint64_t q_rows) {
  gguf::Writer w = tiny_gguf(arch, 50);
  add_tiny_tensors(w, 50, 1, q_type, q_rows);
  auto p = dir / (arch + std::to_string(q_type) + "-" + std::to_string(q_rows) + ".gguf");
  w.write(p);
  return p;
}

TEST(ModelLoadErrors, UnsupportedArchitectureDtypeAndShapes) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  const auto tok = stories_dir() / "tok512.bin";
  EXPECT_NE(load_error(bad_gguf(dir, "gpt2", 0, 32), tok).find("unsupported architecture 'gpt2'"),
            std::string::npos);
  EXPECT_NE(load_error(bad_gguf(dir, "llama", 11, 32), tok)
                .find("'blk.0.attn_q.weight' is q3_k, which sandwich does not support"),
            std::string::npos);
  const std::string shape = load_error(bad_gguf(dir, "llama", 0, 33), tok);
  EXPECT_NE(shape.find("blk.0.attn_q.weight"), std::string::npos) << shape;
  EXPECT_NE(shape.find("expected [32, 32]"), std::string::npos) << shape;
  // A file the tokenizer does not fit: 512 tokens for a 50-token model.
  auto good = bad_gguf(dir, "llama", 0, 32);
  EXPECT_NE(load_error(good, tok).find("tokenizer has 512 tokens"), std::string::npos);
}

TEST(ModelLoadErrors, MissingTokenizerAndTensor) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  std::filesystem::copy_file(stories_dir() / "stories260K.bin", dir / "model.bin");
  const std::string msg = load_error(dir / "model.bin");
  EXPECT_NE(msg.find("no tokenizer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--tokenizer"), std::string::npos) << msg;
  // tokenizer.bin beside a llama2.c model is found by convention.
  std::filesystem::copy_file(stories_dir() / "tok512.bin", dir / "tokenizer.bin");
  EXPECT_EQ(load_error(dir / "model.bin"), "");

  gguf::Writer w = tiny_gguf("llama", 512);
  add_zero_tensor(w, "token_embd.weight", 0, {32, 512});
  w.write(dir / "partial.gguf");
  EXPECT_NE(load_error(dir / "partial.gguf", stories_dir() / "tok512.bin").find("is missing"),
            std::string::npos);
}

// A loadable one-layer GGUF (no tokenizer) with some metadata replaced, and optionally the
// tensors of a second layer its block_count does not mention.
std::filesystem::path gguf_with(const TempDir& dir, const std::string& name,
                                const std::vector<std::pair<std::string, gguf::Value>>& overrides,
                                bool extra_layer = false) {
  gguf::Writer w = tiny_gguf("llama", 50, overrides);
  add_tiny_tensors(w, 50, extra_layer ? 2 : 1);
  w.write(dir / name);
  return dir / name;
}

void expect_load_error(const std::filesystem::path& p, const std::string& fragment) {
  const std::string e = load_error(p);
  EXPECT_NE(e.find(fragment), std::string::npos) << e;
  EXPECT_NE(e.find(p.filename().string()), std::string::npos) << e;
}

TEST(ModelLoadErrors, ImplausibleGgufHeaderValues) {
  TempDir dir;
  // The fixture itself gets as far as the (missing) tokenizer.
  EXPECT_NE(load_error(gguf_with(dir, "ok.gguf", {})).find("no tokenizer"), std::string::npos);
  // A context of 2^31 - 1 positions would need terabytes of RoPE tables.
  expect_load_error(
      gguf_with(dir, "ctx.gguf", {{"llama.context_length", gguf::Value::of_u32(2147483647)}}),
      "context length (max_position_embeddings / context_length) 2147483647 is above the supported "
      "maximum of 1048576");
  // 2^32 + 64 must not be narrowed to 64.
  expect_load_error(
      gguf_with(dir, "dim.gguf",
                {{"llama.embedding_length", gguf::Value::of_u64((uint64_t{1} << 32) + 64)}}),
      "llama.embedding_length = 4294967360 is out of range");
  expect_load_error(
      gguf_with(dir, "theta.gguf", {{"llama.rope.freq_base", gguf::Value::of_f32(INFINITY)}}),
      "rope theta must be a finite positive number");
  expect_load_error(
      gguf_with(dir, "eps.gguf",
                {{"llama.attention.layer_norm_rms_epsilon", gguf::Value::of_f32(NAN)}}),
      "norm eps must be a finite positive number");
  expect_load_error(gguf_with(dir, "factor.gguf",
                              {{"llama.rope.scaling.type", gguf::Value::of_string("linear")},
                               {"llama.rope.scaling.factor", gguf::Value::of_f32(-2.0f)}}),
                    "rope scaling factor must be a finite positive number");
  // Tensors of a layer the header does not count would be dropped without a word.
  expect_load_error(gguf_with(dir, "layers.gguf", {}, true), "tensor blk.1.* (blk.1.");
  expect_load_error(gguf_with(dir, "layers2.gguf", {}, true), "beyond block_count 1");
}

TEST(ModelLoadErrors, MistypedOrImplausibleConfigJson) {
  TempDir dir;
  const std::string base =
      R"("model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,
    "num_key_value_heads":2,"intermediate_size":96,"vocab_size":1000)";
  auto error_of = [&](const std::string& name, const std::string& extra) -> std::string {
    std::ofstream(dir / name) << "{" << base << extra << "}";
    return test::error_text([&] { read_model_config(dir / name); }, "(no error)");
  };
  EXPECT_EQ(error_of("good.json", R"(,"max_position_embeddings":256,"rms_norm_eps":1e-6)"),
            "(no error)");
  std::string e = error_of("eps.json", R"(,"rms_norm_eps":"x")");
  EXPECT_NE(e.find("eps.json"), std::string::npos) << e;
  EXPECT_NE(e.find("\"rms_norm_eps\" must be a number"), std::string::npos) << e;
  e = error_of("ctx.json", R"(,"max_position_embeddings":2147483647)");
  EXPECT_NE(e.find("ctx.json"), std::string::npos) << e;
  EXPECT_NE(e.find("above the supported maximum of 1048576"), std::string::npos) << e;
  e = error_of("theta.json", R"(,"rope_theta":1e39)");  // infinite as a float
  EXPECT_NE(e.find("rope theta must be a finite positive number"), std::string::npos) << e;
  e = error_of("tie.json", R"(,"tie_word_embeddings":"yes")");
  EXPECT_NE(e.find("\"tie_word_embeddings\" must be true or false"), std::string::npos) << e;
  e = error_of("scaling.json", R"(,"rope_scaling":{"rope_type":"llama3","factor":"big"})");
  EXPECT_NE(e.find("scaling.json rope_scaling: \"factor\" must be a number"), std::string::npos)
      << e;
  e = error_of("bos.json", R"(,"bos_token_id":4294967296)");
  EXPECT_NE(e.find("\"bos_token_id\" is out of range"), std::string::npos) << e;
  // A wrapped 2^32 + 64 must not pass as 64.
  std::ofstream(dir / "dim.json")
      << R"({"hidden_size":4294967360,"num_hidden_layers":2,"num_attention_heads":4,
    "intermediate_size":96,"vocab_size":1000})";
  try {
    read_model_config(dir / "dim.json");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e2) {
    EXPECT_NE(std::string(e2.what()).find("\"hidden_size\" is out of range"), std::string::npos)
        << e2.what();
  }
}

TEST(ModelLoadErrors, MistypedSafetensorsHeader) {
  TempDir dir;
  std::filesystem::create_directories(dir / "hf");
  std::ofstream(dir / "hf/config.json")
      << R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":2,
    "num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":96,"vocab_size":1000})";
  auto write_st = [&](const std::string& header) {
    std::ofstream out(dir / "hf/model.safetensors", std::ios::binary);
    const uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << std::string(64, '\0');
  };
  write_st(R"({"model.embed_tokens.weight":{"dtype":5,"shape":[2,2],"data_offsets":[0,16]}})");
  std::string e = load_error(dir / "hf");
  EXPECT_NE(
      e.find("model.safetensors: tensor 'model.embed_tokens.weight' has an invalid \"dtype\" 5"),
      std::string::npos)
      << e;
  write_st(
      R"({"model.embed_tokens.weight":{"dtype":"F32","shape":[2,2],"data_offsets":["0",16]}})");
  e = load_error(dir / "hf");
  EXPECT_NE(e.find("invalid \"data_offsets\""), std::string::npos) << e;
  write_st(
      R"({"model.embed_tokens.weight":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}})");
  e = load_error(dir / "hf");
  EXPECT_NE(e.find("invalid \"shape\""), std::string::npos) << e;
}

TEST(ModelLoadErrors, ThreadCountIsCheckedBeforeLoading) {
  LoadOptions o;
  o.model = "/nonexistent/model.gguf";
  o.threads = -3;
  EXPECT_THROW(load_model(o), std::invalid_argument);
  o.threads = max_threads() + 1;
  EXPECT_THROW(load_model(o), std::invalid_argument);
}

TEST(ModelLoadErrors, PromptLongerThanTheContext) {
  SANDWICH_REQUIRE_DATA();
  auto m = load(stories_dir() / "stories260K.bin", stories_dir() / "tok512.bin");
  Generator g(*m, 1);
  GenerationRequest r;
  r.prompt.assign(600, 5);
  try {
    g.generate(r);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("context is 512"), std::string::npos) << e.what();
  }
  r.prompt.clear();
  EXPECT_THROW(g.generate(r), std::invalid_argument);
  r.prompt = {1, 5000};
  EXPECT_THROW(g.generate(r), std::invalid_argument);
}

}  // namespace
}  // namespace sandwich::engine
