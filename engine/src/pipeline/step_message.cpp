#include "pipeline/step_message.h"

#include <cstring>
#include <stdexcept>

namespace sandwich::engine::pipeline {
namespace {

constexpr uint32_t kMagic = 0x53504950;  // "SPIP"

struct Header {
  uint32_t magic, kind, phase, micro;
  uint64_t step;
  StartInfo start;
  int32_t n_entries, n_tokens, n_tables, logit_rows, hidden_rows, text_bytes;
  uint64_t n_rows;
  double busy_seconds;
};

template <class T>
void put(Bytes& out, const T* data, size_t n) {
  const size_t at = out.size();
  out.resize(at + n * sizeof(T));
  if (n) std::memcpy(out.data() + at, data, n * sizeof(T));
}

class Reader {
 public:
  explicit Reader(const Bytes& b) : b_(b) {}
  template <class T>
  void get(T* data, size_t n) {
    if (n > (b_.size() - at_) / sizeof(T))
      throw std::runtime_error("a pipeline message is shorter than its header says");
    if (n) std::memcpy(data, b_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
  }
  bool done() const { return at_ == b_.size(); }

 private:
  const Bytes& b_;
  size_t at_ = 0;
};

}  // namespace

std::vector<BatchEntry> Message::batch() const {
  std::vector<BatchEntry> out;
  out.reserve(entries.size());
  for (const Entry& e : entries)
    out.push_back({std::span<const int32_t>(tokens.data() + e.token_offset, e.n_tokens),
                   e.start_pos,
                   std::span<const int32_t>(tables.data() + e.table_offset, e.n_blocks),
                   e.want_logits != 0, e.all_logits != 0, static_cast<HiddenOutput>(e.hidden)});
  return out;
}

void Message::set_batch(std::span<const BatchEntry> batch) {
  entries.clear();
  tokens.clear();
  tables.clear();
  for (const BatchEntry& e : batch) {
    entries.push_back({static_cast<int32_t>(tokens.size()), static_cast<int32_t>(e.tokens.size()),
                       e.start_pos, static_cast<int32_t>(tables.size()),
                       static_cast<int32_t>(e.block_table.size()), e.want_logits ? 1 : 0,
                       e.all_logits ? 1 : 0, static_cast<int32_t>(e.hidden)});
    tokens.insert(tokens.end(), e.tokens.begin(), e.tokens.end());
    tables.insert(tables.end(), e.block_table.begin(), e.block_table.end());
  }
}

Bytes encode(const Message& m) {
  Header h{kMagic,
           static_cast<uint32_t>(m.kind),
           m.phase,
           m.micro,
           m.step,
           m.start,
           static_cast<int32_t>(m.entries.size()),
           static_cast<int32_t>(m.tokens.size()),
           static_cast<int32_t>(m.tables.size()),
           m.logit_rows,
           m.hidden_rows,
           static_cast<int32_t>(m.text.size()),
           m.rows.size(),
           m.busy_seconds};
  Bytes out;
  out.reserve(sizeof h + m.entries.size() * sizeof(Message::Entry) + m.tokens.size() * 4 +
              m.tables.size() * 4 + m.rows.size() * 4 + m.text.size());
  put(out, &h, 1);
  put(out, m.entries.data(), m.entries.size());
  put(out, m.tokens.data(), m.tokens.size());
  put(out, m.tables.data(), m.tables.size());
  put(out, m.rows.data(), m.rows.size());
  put(out, m.text.data(), m.text.size());
  return out;
}

Message decode(const Bytes& bytes) {
  Reader r(bytes);
  Header h{};
  r.get(&h, 1);
  if (h.magic != kMagic || h.kind < 1 || h.kind > 5 || h.n_entries < 0 || h.n_tokens < 0 ||
      h.n_tables < 0 || h.text_bytes < 0)
    throw std::runtime_error("not a pipeline message (another program on this MPI job?)");
  Message m;
  m.kind = static_cast<Kind>(h.kind);
  m.phase = h.phase;
  m.micro = h.micro;
  m.step = h.step;
  m.start = h.start;
  m.logit_rows = h.logit_rows;
  m.hidden_rows = h.hidden_rows;
  m.busy_seconds = h.busy_seconds;
  const auto count = [&](int64_t n, size_t unit) {
    if (static_cast<uint64_t>(n) > bytes.size() / unit)
      throw std::runtime_error("a pipeline message is shorter than its header says");
    return static_cast<size_t>(n);
  };
  m.entries.resize(count(h.n_entries, sizeof(Message::Entry)));
  m.tokens.resize(count(h.n_tokens, 4));
  m.tables.resize(count(h.n_tables, 4));
  m.rows.resize(count(static_cast<int64_t>(h.n_rows), 4));
  m.text.resize(count(h.text_bytes, 1));
  r.get(m.entries.data(), m.entries.size());
  r.get(m.tokens.data(), m.tokens.size());
  r.get(m.tables.data(), m.tables.size());
  r.get(m.rows.data(), m.rows.size());
  r.get(m.text.data(), m.text.size());
  if (!r.done()) throw std::runtime_error("a pipeline message is longer than its header says");
  for (const Message::Entry& e : m.entries)
    if (e.token_offset < 0 || e.n_tokens < 0 || e.table_offset < 0 || e.n_blocks < 0 ||
        static_cast<size_t>(e.token_offset) + e.n_tokens > m.tokens.size() ||
        static_cast<size_t>(e.table_offset) + e.n_blocks > m.tables.size())
      throw std::runtime_error("a pipeline message's entries point outside it");
  return m;
}

}  // namespace sandwich::engine::pipeline
