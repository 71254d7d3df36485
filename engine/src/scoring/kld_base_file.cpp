#include "engine/scoring/kld_base_file.h"

#include <cstring>
#include <optional>
#include <stdexcept>

#include "engine/scoring/perplexity.h"

namespace sandwich::engine {
namespace {

constexpr char kMagic[8] = {'S', 'A', 'N', 'D', 'K', 'L', 'D', '1'};

// The sizes the file records apart from the vocabulary's.
std::string shape_text(const ModelShape& s) {
  return "dim " + std::to_string(s.dim) + ", " + std::to_string(s.n_layers) + " layers, " +
         std::to_string(s.n_heads) + " heads (" + std::to_string(s.n_kv_heads) + " KV), FFN " +
         std::to_string(s.ffn_dim);
}

// The bytes the tokens and rows of a header take; nullopt past 2^64 (a corrupt header).
std::optional<uint64_t> body_bytes(const KLDBaseInfo& i) {
  uint64_t tokens = 0, rows = 0, row_bytes = 0, all = 0;
  if (__builtin_mul_overflow(uint64_t(i.n_chunks), uint64_t(i.n_ctx), &tokens) ||
      __builtin_mul_overflow(uint64_t(i.n_chunks), uint64_t(scored_count(i.n_ctx)), &rows) ||
      __builtin_mul_overflow(rows, uint64_t(i.shape.vocab_size) * sizeof(float), &row_bytes) ||
      __builtin_add_overflow(tokens * sizeof(int32_t), row_bytes, &all))
    return std::nullopt;
  return all;
}

}  // namespace

uint64_t vocab_hash(const Tokenizer& tok) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (int32_t i = 0; i < tok.vocab_size(); ++i) {
    for (char c : tok.token_text(i)) mix(static_cast<unsigned char>(c));
    mix(0xff);  // no token string holds 0xff in UTF-8, so "ab","c" differs from "a","bc"
  }
  return h;
}

KLDBaseInfo KLDBaseInfo::of(const Model& m) {
  KLDBaseInfo i;
  i.shape = shape_of(m.config);
  i.vocab_hash = m.tokenizer ? engine::vocab_hash(*m.tokenizer) : 0;
  i.model = m.source;
  return i;
}

void check_base_matches(const KLDBaseInfo& base, const Model& model,
                        const std::filesystem::path& file) {
  const KLDBaseInfo ours = KLDBaseInfo::of(model);
  const std::string where = file.string() + ": the base model (" + base.model + ")";
  const int32_t base_vocab = base.shape.vocab_size, our_vocab = ours.shape.vocab_size;
  if (base_vocab != our_vocab)
    throw std::invalid_argument(where + " has a vocabulary of " + std::to_string(base_vocab) +
                                " tokens, this model " + std::to_string(our_vocab) +
                                "; compare versions of one model");
  if (base.vocab_hash != ours.vocab_hash)
    throw std::invalid_argument(where + " has other tokens than this model's vocabulary of " +
                                std::to_string(our_vocab) + "; compare versions of one model");
  if (shape_text(base.shape) != shape_text(ours.shape))
    throw std::invalid_argument(where + " has another shape (" + shape_text(base.shape) +
                                ") than this model (" + shape_text(ours.shape) +
                                "); compare versions of one model");
}

KLDBaseWriter::KLDBaseWriter(const std::filesystem::path& path, const KLDBaseInfo& info)
    : path_(path), partial_(path.string() + ".partial"), info_(info) {
  if (static_cast<int64_t>(info.tokens.size()) != int64_t{info.n_chunks} * info.n_ctx)
    throw std::invalid_argument("a KL-divergence base needs n_chunks * n_ctx tokens");
  out_.open(partial_, std::ios::binary | std::ios::trunc);
  if (!out_) throw std::runtime_error("cannot write " + partial_.string());
  auto u32 = [this](uint32_t v) { out_.write(reinterpret_cast<const char*>(&v), 4); };
  out_.write(kMagic, sizeof kMagic);
  const ModelShape& sh = info.shape;
  for (int32_t v : {info.n_ctx, info.n_chunks, sh.vocab_size, sh.dim, sh.n_layers, sh.n_heads,
                    sh.n_kv_heads, sh.ffn_dim})
    u32(static_cast<uint32_t>(v));
  out_.write(reinterpret_cast<const char*>(&info.vocab_hash), 8);
  u32(static_cast<uint32_t>(info.model.size()));
  out_.write(info.model.data(), static_cast<std::streamsize>(info.model.size()));
  const char pad[4] = {};
  out_.write(pad, static_cast<std::streamsize>((4 - info.model.size() % 4) % 4));
  out_.write(reinterpret_cast<const char*>(info.tokens.data()),
             static_cast<std::streamsize>(info.tokens.size() * sizeof(int32_t)));
}

KLDBaseWriter::~KLDBaseWriter() {
  if (finished_) return;
  out_.close();
  std::error_code ec;
  std::filesystem::remove(partial_, ec);
}

void KLDBaseWriter::add_chunk(std::span<const float> log_probs) {
  const size_t want = static_cast<size_t>(scored_count(info_.n_ctx)) * info_.shape.vocab_size;
  if (log_probs.size() != want || written_ >= info_.n_chunks)
    throw std::logic_error("KLDBaseWriter: a chunk of the wrong size, or one too many");
  out_.write(reinterpret_cast<const char*>(log_probs.data()),
             static_cast<std::streamsize>(want * sizeof(float)));
  if (!out_) throw std::runtime_error("cannot write " + partial_.string() + " (disk full?)");
  ++written_;
}

void KLDBaseWriter::finish() {
  if (written_ != info_.n_chunks)
    throw std::logic_error("KLDBaseWriter: " + std::to_string(written_) + " of " +
                           std::to_string(info_.n_chunks) + " chunks written");
  out_.close();
  if (!out_) throw std::runtime_error("cannot write " + partial_.string() + " (disk full?)");
  std::filesystem::rename(partial_, path_);
  finished_ = true;
}

KLDBaseReader::KLDBaseReader(const std::filesystem::path& path) : file_(path) {
  const uint8_t* p = file_.data();
  const size_t n = file_.size();
  size_t pos = 0;
  auto fail = [&](const std::string& what) -> void {
    throw std::runtime_error(path.string() + ": " + what);
  };
  auto take = [&](void* dst, size_t k) {
    if (k > n - pos) fail("truncated (not a whole KL-divergence base file)");
    std::memcpy(dst, p + pos, k);
    pos += k;
  };
  char magic[8] = {};
  if (n < sizeof magic || std::memcmp(p, kMagic, sizeof kMagic) != 0)
    fail("not a KL-divergence base file (sandwich-perplexity --kl-divergence-base writes them)");
  take(magic, sizeof magic);
  ModelShape& sh = info_.shape;
  int32_t* fields[] = {&info_.n_ctx, &info_.n_chunks, &sh.vocab_size, &sh.dim,
                       &sh.n_layers, &sh.n_heads,     &sh.n_kv_heads, &sh.ffn_dim};
  for (int32_t* f : fields) {
    uint32_t v = 0;
    take(&v, 4);
    if (v > (1u << 30)) fail("corrupt header");
    *f = static_cast<int32_t>(v);
  }
  if (info_.n_ctx < kMinScoringContext || info_.n_chunks < 1 || info_.shape.vocab_size < 1)
    fail("corrupt header (context " + std::to_string(info_.n_ctx) + ", " +
         std::to_string(info_.n_chunks) + " chunks, vocabulary " +
         std::to_string(info_.shape.vocab_size) + ")");
  take(&info_.vocab_hash, 8);
  uint32_t len = 0;
  take(&len, 4);
  if (len > n - pos) fail("truncated (not a whole KL-divergence base file)");
  info_.model.assign(reinterpret_cast<const char*>(p + pos), len);
  pos += len + (4 - len % 4) % 4;
  const std::optional<uint64_t> body = body_bytes(info_);
  if (pos > n || !body || *body != n - pos)
    fail("holds " + std::to_string(n) +
         " bytes, not what its header says (truncated or not a "
         "KL-divergence base file)");
  const size_t n_tokens = static_cast<size_t>(info_.n_chunks) * static_cast<size_t>(info_.n_ctx);
  info_.tokens.resize(n_tokens);
  take(info_.tokens.data(), n_tokens * sizeof(int32_t));
  for (int32_t t : info_.tokens)
    if (t < 0 || t >= info_.shape.vocab_size) fail("corrupt token id " + std::to_string(t));
  rows_offset_ = pos;
}

std::span<const float> KLDBaseReader::chunk(int32_t i) const {
  if (i < 0 || i >= info_.n_chunks)
    throw std::out_of_range("chunk " + std::to_string(i) + " of a base of " +
                            std::to_string(info_.n_chunks));
  const size_t rows = static_cast<size_t>(scored_count(info_.n_ctx)) * info_.shape.vocab_size;
  // The rows start 4-byte aligned in a page-aligned map.
  const auto* base = reinterpret_cast<const float*>(file_.data() + rows_offset_);
  return {base + static_cast<size_t>(i) * rows, rows};
}

}  // namespace sandwich::engine
