#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "engine/formats/gguf.h"
#include "formats/gguf_scalars.h"

namespace sandwich::engine::gguf {
namespace {

class Out {
 public:
  explicit Out(const std::filesystem::path& p) : path_(p), f_(std::fopen(p.c_str(), "wb")) {
    if (!f_) throw std::runtime_error("cannot create " + p.string() + ": " + std::strerror(errno));
  }
  ~Out() {
    if (f_) std::fclose(f_);
  }
  void bytes(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n)
      throw std::runtime_error("write to " + path_.string() + " failed: " + std::strerror(errno));
    pos_ += n;
  }
  template <class T>
  void pod(T v) {
    bytes(&v, sizeof v);
  }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void pad_to(uint64_t a) {
    static const char zeros[64] = {};
    while (pos_ % a) bytes(zeros, std::min<uint64_t>(a - pos_ % a, sizeof zeros));
  }
  void close() {
    if (std::fclose(f_) != 0) {
      f_ = nullptr;
      throw std::runtime_error("closing " + path_.string() + " failed: " + std::strerror(errno));
    }
    f_ = nullptr;
  }

 private:
  std::filesystem::path path_;
  FILE* f_;
  uint64_t pos_ = 0;
};

void write_number(Out& o, ValueType t, double f, int64_t i) {
  const bool scalar = detail::visit_scalar(t, [&](auto s) {
    using S = decltype(s);
    using T = typename S::stored;
    if constexpr (S::is_float)
      o.pod<T>(static_cast<T>(f));
    else
      o.pod<T>(static_cast<T>(S::is_bool ? i != 0 : i));
  });
  if (!scalar) throw std::logic_error("not a numeric GGUF type");
}

}  // namespace

void Writer::set(const std::string& key, Value v) {
  for (auto& [k, old] : kv_)
    if (k == key) {
      old = std::move(v);
      return;
    }
  kv_.emplace_back(key, std::move(v));
}

void Writer::add_tensor(const std::string& name, uint32_t type, std::vector<uint64_t> dims,
                        Fill fill) {
  tensors_.push_back({name, type, std::move(dims), std::move(fill)});
}

void Writer::write(const std::filesystem::path& path, uint32_t alignment) const {
  Out o(path);
  o.pod<uint32_t>(0x46554747);
  o.pod<uint32_t>(3);
  o.pod<uint64_t>(tensors_.size());
  bool has_alignment = false;
  for (auto& [k, v] : kv_) has_alignment |= k == "general.alignment";
  o.pod<uint64_t>(kv_.size() + (alignment != 32 && !has_alignment ? 1 : 0));
  for (auto& [k, v] : kv_) {
    o.str(k);
    o.pod<uint32_t>(static_cast<uint32_t>(v.type));
    if (v.type == ValueType::STRING) {
      o.str(v.s);
    } else if (v.type == ValueType::ARRAY) {
      o.pod<uint32_t>(static_cast<uint32_t>(v.array_type));
      if (v.array_type == ValueType::STRING) {
        o.pod<uint64_t>(v.strings.size());
        for (auto& s : v.strings) o.str(s);
      } else {
        o.pod<uint64_t>(v.numbers.size());
        for (double d : v.numbers) write_number(o, v.array_type, d, detail::integer_view(d));
      }
    } else {
      write_number(o, v.type, v.f, v.i);
    }
  }
  if (alignment != 32 && !has_alignment) {
    o.str("general.alignment");
    o.pod<uint32_t>(static_cast<uint32_t>(ValueType::U32));
    o.pod<uint32_t>(alignment);
  }
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (auto& t : tensors_) {
    uint64_t n = 1;
    for (auto d : t.dims) n *= d;
    uint64_t nb = tensor_type_bytes(t.type, n);
    if (nb == 0) throw std::invalid_argument("tensor '" + t.name + "': unsupported type or shape");
    o.str(t.name);
    o.pod<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (auto d : t.dims) o.pod<uint64_t>(d);
    o.pod<uint32_t>(t.type);
    o.pod<uint64_t>(offset);
    sizes.push_back(nb);
    offset += (nb + alignment - 1) / alignment * alignment;
  }
  o.pad_to(alignment);
  std::vector<uint8_t> buf;
  for (size_t k = 0; k < tensors_.size(); ++k) {
    buf.assign(sizes[k], 0);
    tensors_[k].fill(buf.data(), sizes[k]);
    o.bytes(buf.data(), buf.size());
    o.pad_to(alignment);
  }
  o.close();
}

}  // namespace sandwich::engine::gguf
