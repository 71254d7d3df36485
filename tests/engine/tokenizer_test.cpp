// Every tokenizer against the real reference vectors in ../shared/data/tokenizers.
#include <chrono>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/formats/gguf.h"
#include "engine/text/chat_template.h"
#include "engine/text/tokenizer.h"
#include "error_text.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

using test::data_dir;
using test::TempDir;

using test::slurp;

struct Vector {
  std::string text;
  std::vector<int32_t> ids;
};

// X.inp holds inputs, each followed by "\n__ggml_vocab_test__\n"; X.out one line of ids each.
std::vector<Vector> read_vectors(const std::filesystem::path& inp) {
  const std::string all = slurp(inp);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t start = 0;;) {
    const size_t at = all.find(sep, start);
    if (at == std::string::npos) break;
    texts.push_back(all.substr(start, at - start));
    start = at + sep.size();
  }
  std::istringstream out(slurp(inp.string().substr(0, inp.string().size() - 4) + ".out"));
  std::vector<Vector> v;
  std::string line;
  for (auto& t : texts) {
    std::getline(out, line);
    Vector x{t, {}};
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) x.ids.push_back(id);
    v.push_back(std::move(x));
  }
  return v;
}

void check_vectors(const Tokenizer& tok, const std::vector<Vector>& vectors, bool check_decode) {
  ASSERT_GT(vectors.size(), 40u);
  for (const auto& v : vectors) {
    EXPECT_EQ(tok.encode(v.text, false), v.ids) << "encoding '" << v.text << "'";
    if (check_decode) {
      EXPECT_EQ(tok.decode(v.ids), v.text) << "decoding the ids of '" << v.text << "'";
    }
  }
}

std::filesystem::path spm_vectors() {
  return data_dir() / "tokenizers/vocab-gguf/ggml-vocab-llama-spm.gguf.inp";
}
std::filesystem::path bpe_vectors() {
  return data_dir() / "tokenizers/llama3/ggml-vocab-llama-bpe.gguf.inp";
}
std::filesystem::path llama2_model() {
  return data_dir() / "tokenizers/llama2/tokenizer.model";
}
std::filesystem::path llama3_model() {
  return data_dir() / "tokenizers/llama3/tokenizer.model";
}

TEST(TokenizerLlama2, SentencePieceModelMatchesVectors) {
  SANDWICH_REQUIRE_DATA();
  auto tok = load_tokenizer(llama2_model());
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  check_vectors(*tok, read_vectors(spm_vectors()), true);
  EXPECT_EQ(tok->encode("Hello world", true), (std::vector<int32_t>{1, 15043, 3186}));
}

TEST(TokenizerLlama2, GgufVocabMatchesVectors) {
  SANDWICH_REQUIRE_DATA();
  auto tok = load_tokenizer(data_dir() / "tokenizers/vocab-gguf/ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(tok->vocab_size(), 32000);
  check_vectors(*tok, read_vectors(spm_vectors()), true);
}

// A tokenizer.json in the Hugging Face Llama-2 style (BPE with byte fallback), derived from the
// SentencePiece model the way Hugging Face's converter does it.
TEST(TokenizerLlama2, SpmStyleTokenizerJsonMatchesVectors) {
  SANDWICH_REQUIRE_DATA();
  const Vocab v = vocab_from_tokenizer_file(llama2_model());
  std::unordered_map<std::string, int32_t> id;
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    id[v.tokens[i]] = static_cast<int32_t>(i);
    vocab[v.tokens[i]] = i;
  }
  std::vector<std::pair<size_t, std::string>> by_score;
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.types[i] == TokenType::Normal) by_score.push_back({i, v.tokens[i]});
  std::stable_sort(by_score.begin(), by_score.end(),
                   [&](auto& a, auto& b) { return v.scores[a.first] > v.scores[b.first]; });
  nlohmann::json merges = nlohmann::json::array();
  for (auto& [i, t] : by_score) {
    std::vector<std::tuple<int32_t, int32_t, size_t>> local;
    for (size_t k = 1; k < t.size(); ++k) {
      auto l = id.find(t.substr(0, k)), r = id.find(t.substr(k));
      if (l != id.end() && r != id.end()) local.emplace_back(l->second, r->second, k);
    }
    std::sort(local.begin(), local.end());
    for (auto& [a, b, k] : local) merges.push_back(t.substr(0, k) + " " + t.substr(k));
  }
  nlohmann::json j = {
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", 0}, {"content", "<unk>"}, {"special", true}},
        {{"id", 1}, {"content", "<s>"}, {"special", true}},
        {{"id", 2}, {"content", "</s>"}, {"special", true}}}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "\xe2\x96\x81"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xe2\x96\x81"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}}},
      {"model",
       {{"type", "BPE"},
        {"byte_fallback", true},
        {"unk_token", "<unk>"},
        {"vocab", vocab},
        {"merges", merges}}}};
  TempDir dir;
  std::ofstream(dir / "tokenizer.json") << j.dump();
  auto tok = load_tokenizer(dir.path());
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_TRUE(tok->add_bos_default());
  check_vectors(*tok, read_vectors(spm_vectors()), true);
}

TEST(TokenizerLlama3, TiktokenModelMatchesMetasVectors) {
  SANDWICH_REQUIRE_DATA();
  auto tok = load_tokenizer(llama3_model());
  EXPECT_EQ(tok->vocab_size(), 128256);
  const auto e = nlohmann::json::parse(slurp(data_dir() / "tokenizers/llama3/expected.json"));
  // encode with BOS and EOS
  auto ids = tok->encode(e["encode_with_bos_eos"]["text"].get<std::string>(), true);
  ids.push_back(tok->eos_id());
  EXPECT_EQ(ids, e["encode_with_bos_eos"]["ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(tok->decode(e["decode"]["ids"].get<std::vector<int32_t>>(), true), e["decode"]["text"]);
  EXPECT_EQ(tok->decode(e["decode"]["ids"].get<std::vector<int32_t>>()),
            "This is a test sentence.");
  // stop tokens: <|end_of_text|> and <|eot_id|>
  EXPECT_NE(std::find(tok->stop_ids().begin(), tok->stop_ids().end(), 128001),
            tok->stop_ids().end());
  EXPECT_NE(std::find(tok->stop_ids().begin(), tok->stop_ids().end(), 128009),
            tok->stop_ids().end());
  // special tokens only when asked
  EXPECT_EQ(tok->encode("<|eot_id|>", false, true), (std::vector<int32_t>{128009}));
  EXPECT_GT(tok->encode("<|eot_id|>", false, false).size(), 1u);
}

TEST(TokenizerLlama3, ChatFormatMatchesMetasVectors) {
  SANDWICH_REQUIRE_DATA();
  auto tok = load_tokenizer(llama3_model());
  const auto e = nlohmann::json::parse(slurp(data_dir() / "tokenizers/llama3/expected.json"));
  const auto& m = e["chat_message_user"];
  const std::string one =
      render_chat(ChatFormat::Llama3, {{m["role"], m["content"]}}, false, "", "");
  EXPECT_EQ(tok->encode(one, false, true), m["ids"].get<std::vector<int32_t>>());
  std::vector<ChatMessage> dialog;
  for (auto& x : e["chat_dialog"]["messages"]) dialog.push_back({x["role"], x["content"]});
  const std::string all =
      render_chat(ChatFormat::Llama3, dialog, true, "<|begin_of_text|>", "<|end_of_text|>");
  EXPECT_EQ(tok->encode(all, false, true), e["chat_dialog"]["ids"].get<std::vector<int32_t>>());
}

TEST(TokenizerLlama3, TiktokenMatchesGgmlVectors) {
  SANDWICH_REQUIRE_DATA();
  check_vectors(*load_tokenizer(llama3_model()), read_vectors(bpe_vectors()), true);
}

TEST(TokenizerLlama3, GgufAndTokenizerJsonFixturesMatchVectors) {
  SANDWICH_REQUIRE_DATA();
  const Vocab v = vocab_from_tokenizer_file(llama3_model());
  ASSERT_GT(v.merges.size(), 100000u);
  TempDir dir;
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::of_string("llama"));
  vocab_to_gguf(v, w);
  w.write(dir / "llama3-vocab.gguf");
  auto g = load_tokenizer(dir / "llama3-vocab.gguf");
  check_vectors(*g, read_vectors(bpe_vectors()), true);

  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.types[i] == TokenType::Control)
      added.push_back({{"id", i}, {"content", v.tokens[i]}, {"special", true}});
    else
      vocab[v.tokens[i]] = i;
  }
  const char* re =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  nlohmann::json j = {
      {"added_tokens", added},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
      {"model",
       {{"type", "BPE"}, {"ignore_merges", true}, {"vocab", vocab}, {"merges", v.merges}}}};
  std::ofstream(dir / "tokenizer.json") << j.dump();
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"bos_token":"<|begin_of_text|>","eos_token":"<|end_of_text|>","add_bos_token":true,"chat_template":"{{ '<|start_header_id|>' }}"})";
  auto t = load_tokenizer(dir.path());
  EXPECT_EQ(t->bos_id(), 128000);
  EXPECT_EQ(t->chat_template(), "{{ '<|start_header_id|>' }}");
  check_vectors(*t, read_vectors(bpe_vectors()), true);
}

TEST(TokenizerLlama2c, TokenizerBinEncodesLikeRunC) {
  SANDWICH_REQUIRE_DATA();
  auto tok = load_tokenizer(data_dir() / "models/stories260K/tok512.bin");
  EXPECT_EQ(tok->vocab_size(), 512);
  // Ids printed by llama2.c's run.c for this prompt.
  EXPECT_EQ(tok->encode("Once upon a time, there was a big dog", true),
            (std::vector<int32_t>{1, 403, 407, 261, 378, 432, 383, 286, 261, 370, 400, 428}));
  EXPECT_EQ(tok->encode("", true), (std::vector<int32_t>{1}));
  EXPECT_EQ(tok->piece(403, 1), "Once");  // the dummy space goes after BOS
  EXPECT_EQ(tok->piece(407, 403), " upon");
  const std::string text = "Lily's mom said, \"Let's go!\" 日本";
  EXPECT_EQ(tok->decode(tok->encode(text, true)), text);  // byte fallback round trip
  EXPECT_NE(std::find(tok->stop_ids().begin(), tok->stop_ids().end(), 1), tok->stop_ids().end());
}

TEST(TokenizerSynthetic, BothKindsRoundTripAndSurviveGguf) {
  const std::string text =
      "Hello, world! 1234 ünïcödé 日本語 \n\t  spaces   and\nnewlines 🙂";
  for (auto [kind, n] :
       {std::pair{Vocab::Kind::SentencePiece, 32000}, std::pair{Vocab::Kind::ByteLevelBPE, 128256},
        std::pair{Vocab::Kind::ByteLevelBPE, 1000}, std::pair{Vocab::Kind::SentencePiece, 300}}) {
    const Vocab v = make_synthetic_vocab(kind, n);
    ASSERT_EQ(static_cast<int32_t>(v.tokens.size()), n);
    auto tok = make_tokenizer(v);
    const auto ids = tok->encode(text, true);
    EXPECT_EQ(ids[0], tok->bos_id());
    if (n >= 32000) {
      EXPECT_LE(tok->encode("hello world and more words", false).size(),
                16u);  // 26 characters: merges happen
    }
    EXPECT_EQ(tok->decode(ids), text) << n;
    TempDir dir;
    gguf::Writer w;
    vocab_to_gguf(v, w);
    w.write(dir / "v.gguf");
    EXPECT_EQ(load_tokenizer(dir / "v.gguf")->encode(text, true), ids) << n;
  }
  EXPECT_THROW(make_synthetic_vocab(Vocab::Kind::SentencePiece, 100), std::invalid_argument);
}

TEST(TokenizerErrors, BadFilesGiveClearErrors) {
  SANDWICH_REQUIRE_DATA();
  TempDir dir;
  auto error_of = [](const std::filesystem::path& p) {
    return test::error_text([&] { load_tokenizer(p); });
  };
  EXPECT_NE(error_of(dir / "missing.model").find("does not exist"), std::string::npos);
  std::ofstream(dir / "empty.bin").close();
  EXPECT_NE(error_of(dir / "empty.bin").find("empty"), std::string::npos);
  const std::string tok512 = slurp(data_dir() / "models/stories260K/tok512.bin");
  std::ofstream(dir / "cut.bin", std::ios::binary) << tok512.substr(0, tok512.size() - 7);
  EXPECT_NE(error_of(dir / "cut.bin").find("truncated"), std::string::npos);
  std::ofstream(dir / "garbage.model", std::ios::binary)
      << std::string("\x0a\xff\xff\xff garbage", 12);
  EXPECT_NE(error_of(dir / "garbage.model").find("garbage.model"), std::string::npos);
  std::ofstream(dir / "unigram.json") << R"({"model":{"type":"Unigram","vocab":[]}})";
  EXPECT_NE(error_of(dir / "unigram.json").find("Unigram"), std::string::npos);
  std::ofstream(dir / "broken.json") << R"({"model": )";
  EXPECT_NE(error_of(dir / "broken.json").find("invalid JSON"), std::string::npos);
  std::filesystem::create_directories(dir / "folder");
  EXPECT_NE(error_of(dir / "folder").find("no tokenizer.json"), std::string::npos);
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::of_string("llama"));
  w.write(dir / "novocab.gguf");
  EXPECT_NE(error_of(dir / "novocab.gguf").find("no tokenizer"), std::string::npos);
  std::ofstream(dir / "badrank.model") << "IQ== 0\nIg== 5\n";
  EXPECT_NE(error_of(dir / "badrank.model").find("ranks"), std::string::npos);
}

// Token ids size the vocabulary: a negative, huge or non-integer one is an error naming the
// file, not a crash or a multi-gigabyte allocation.
TEST(TokenizerErrors, TokenizerJsonIdsAreRangeChecked) {
  TempDir dir;
  auto error_of = [&](const std::string& name, const std::string& json) -> std::string {
    std::ofstream(dir / name) << json;
    return test::error_text([&] { load_tokenizer(dir / name); }, "(no error)");
  };
  const std::string vocab = R"("model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]})";
  std::string e =
      error_of("negative.json", "{" + vocab + R"(,"added_tokens":[{"id":-5,"content":"<x>"}]})");
  EXPECT_NE(e.find("negative.json"), std::string::npos) << e;
  EXPECT_NE(e.find("-5"), std::string::npos) << e;
  e = error_of("huge.json",
               R"({"model":{"type":"BPE","vocab":{"a":0,"b":2147483647},"merges":[]}})");
  EXPECT_NE(e.find("huge.json"), std::string::npos) << e;
  EXPECT_NE(e.find("2147483647"), std::string::npos) << e;
  e = error_of("wrapped.json",
               "{" + vocab + R"(,"added_tokens":[{"id":4294967297,"content":"<x>"}]})");
  EXPECT_NE(e.find("4294967297"), std::string::npos) << e;
  e = error_of("text_id.json", "{" + vocab + R"(,"added_tokens":[{"id":"7","content":"<x>"}]})");
  EXPECT_NE(e.find("text_id.json"), std::string::npos) << e;
  e = error_of("content.json", "{" + vocab + R"(,"added_tokens":[{"id":2,"content":5}]})");
  EXPECT_NE(e.find("content.json"), std::string::npos) << e;
  e = error_of("merges.json", R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[[1,2]]}})");
  EXPECT_NE(e.find("merges.json"), std::string::npos) << e;
  // Well-formed ids still load.
  EXPECT_EQ(error_of("ok.json",
                     "{" + vocab + R"(,"added_tokens":[{"id":2,"content":"<x>","special":true}]})"),
            "(no error)");
}

TEST(TokenizerSpeed, EncodesFourThousandTokensQuickly) {
  SANDWICH_REQUIRE_DATA();
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += "The quick brown fox jumps over the lazy dog, again and again (" + std::to_string(i) +
            "). ";
  for (const auto& path : {llama3_model(), llama2_model()}) {
    auto tok = load_tokenizer(path);
    tok->encode(text, true);
    const auto t0 = std::chrono::steady_clock::now();
    const auto ids = tok->encode(text, true);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GT(ids.size(), 3500u);
    EXPECT_LT(ms, 50.0) << path;
    std::printf("%s: %zu tokens in %.2f ms\n", path.filename().c_str(), ids.size(), ms);
  }
}

TEST(IncrementalDecoder, HoldsBackSplitCharactersAndReplacesGarbage) {
  SANDWICH_REQUIRE_DATA();
  auto tok = load_tokenizer(llama3_model());
  const std::string text = "café 日本 🙂!";
  const auto ids = tok->encode(text, false);
  IncrementalDecoder d(*tok);
  std::string out;
  for (int32_t id : ids) {
    const std::string piece = d.push(id);
    // Every piece handed out is valid UTF-8 on its own.
    IncrementalDecoder check(*tok);
    out += piece;
  }
  out += d.flush();
  EXPECT_EQ(out, text);
  // Byte tokens that never form a character become U+FFFD; an unfinished one at the end too.
  auto llama2 = load_tokenizer(llama2_model());
  IncrementalDecoder g(*llama2, 1);
  std::string s = g.push(llama2->token_id("<0xFF>"));
  s += g.push(llama2->token_id("<0x41>"));
  s += g.push(llama2->token_id("<0xE6>"));
  EXPECT_EQ(s,
            "\xef\xbf\xbd"
            "A");
  EXPECT_EQ(g.flush(), "\xef\xbf\xbd");
  IncrementalDecoder h(*llama2, 1);
  EXPECT_EQ(h.push(llama2->token_id("<0xE6>")), "");
  EXPECT_EQ(h.push(llama2->token_id("<0x97>")), "");
  EXPECT_EQ(h.push(llama2->token_id("<0xA5>")), "日");
}

TEST(ChatTemplate, RendersTheBuiltInFormats) {
  const std::vector<ChatMessage> m = {
      {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}};
  EXPECT_EQ(render_chat(ChatFormat::Llama2, m, true, "<s>", "</s>"),
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] Bye [/INST]");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "Hi"}}, true, "", ""),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
}  // namespace sandwich::engine
