#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>

#include "engine/formats/gguf.h"
#include "formats/gguf_scalars.h"

namespace sandwich::engine::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
// A string or array longer than this in a header is corruption, not data.
constexpr uint64_t kMaxCount = uint64_t{1} << 32;

struct TypeInfo {
  uint32_t id;
  const char* name;
  uint32_t block;
  uint32_t bytes;
};
constexpr TypeInfo kTypes[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},
    {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},      {10, "q2_k", 256, 84},
    {11, "q3_k", 256, 110},   {12, "q4_k", 256, 144},   {13, "q5_k", 256, 176},
    {14, "q6_k", 256, 210},   {15, "q8_k", 256, 292},   {16, "iq2_xxs", 256, 66},
    {17, "iq2_xs", 256, 74},  {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
    {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
    {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},
    {29, "iq1_m", 256, 56},   {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
    {35, "tq2_0", 256, 66},
};

const TypeInfo* type_info(uint32_t t) {
  for (const auto& ti : kTypes)
    if (ti.id == t) return &ti;
  return nullptr;
}

class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n, const Reader* r) : p_(p), n_(n), r_(r) {}
  size_t pos() const { return pos_; }
  size_t left() const { return n_ - pos_; }
  void need(uint64_t k, const char* what) {
    if (k > n_ - pos_)
      throw std::runtime_error(std::string("truncated file while reading ") + what + " at byte " +
                               std::to_string(pos_));
  }
  template <class T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const char* what) {
    uint64_t len = read<uint64_t>(what);
    if (len > kMaxCount) throw std::runtime_error(std::string("implausible length of ") + what);
    need(len, what);
    std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return s;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  [[maybe_unused]] const Reader* r_;
};

// Bytes one element of a metadata array takes at least (a string: its 8-byte length).
uint64_t min_element_bytes(ValueType t) {
  if (t == ValueType::STRING) return 8;
  uint64_t bytes = 0;
  detail::visit_scalar(t, [&](auto s) { bytes = sizeof(typename decltype(s)::stored); });
  return bytes;
}

double read_number(Cursor& c, ValueType t, int64_t* as_int) {
  double value = 0;
  const bool scalar = detail::visit_scalar(t, [&](auto s) {
    using S = decltype(s);
    const auto v = c.read<typename S::stored>("value");
    if constexpr (S::is_float) {
      value = v;
      *as_int = detail::integer_view(value);
    } else {
      *as_int = S::is_bool ? v != 0 : static_cast<int64_t>(v);
      value = static_cast<double>(*as_int);
    }
  });
  if (!scalar)
    throw std::runtime_error("unknown metadata value type " +
                             std::to_string(static_cast<uint32_t>(t)));
  return value;
}

Value read_value(Cursor& c, ValueType t, const std::string& key) {
  Value v;
  v.type = t;
  if (t == ValueType::STRING) {
    v.s = c.read_string("string value");
  } else if (t == ValueType::ARRAY) {
    auto et = static_cast<ValueType>(c.read<uint32_t>("array type"));
    uint64_t n = c.read<uint64_t>("array length");
    // llama.cpp rejects them too; no Llama metadata uses them.
    if (et == ValueType::ARRAY)
      throw std::runtime_error("metadata '" + key + "': nested arrays are not supported");
    const uint64_t elem = min_element_bytes(et);
    if (elem == 0)
      throw std::runtime_error("metadata '" + key + "' is an array of unknown type " +
                               std::to_string(static_cast<uint32_t>(et)));
    // Checked before anything is reserved: a corrupt count must not turn into a huge allocation.
    if (n > kMaxCount || n > c.left() / elem)
      throw std::runtime_error("implausible array length " + std::to_string(n) + " of metadata '" +
                               key + "' (" + std::to_string(c.left()) + " bytes left in the file)");
    v.array_type = et;
    if (et == ValueType::STRING) {
      v.strings.reserve(n);
      for (uint64_t k = 0; k < n; ++k) v.strings.push_back(c.read_string("string array element"));
    } else {
      v.numbers.reserve(n);
      int64_t ignored;
      for (uint64_t k = 0; k < n; ++k) v.numbers.push_back(read_number(c, et, &ignored));
    }
  } else {
    v.f = read_number(c, t, &v.i);
  }
  return v;
}

}  // namespace

std::string tensor_type_name(uint32_t type) {
  if (const TypeInfo* ti = type_info(type)) return ti->name;
  return "type " + std::to_string(type);
}

uint64_t tensor_type_bytes(uint32_t type, uint64_t n) {
  const TypeInfo* ti = type_info(type);
  if (!ti || n % ti->block != 0) return 0;
  return n / ti->block * ti->bytes;
}

uint32_t tensor_type_block_elems(uint32_t type) {
  const TypeInfo* ti = type_info(type);
  return ti ? ti->block : 0;
}

uint64_t TensorInfo::elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;
  return n;
}

bool Value::is_integer() const {
  bool integer = false;
  detail::visit_scalar(type, [&](auto s) { integer = !decltype(s)::is_float; });
  return integer;
}

namespace {

// A number: its integer and floating views, as the caller converts them for its type.
Value number(ValueType t, int64_t i, double f) {
  Value r;
  r.type = t;
  r.i = i;
  r.f = f;
  return r;
}

Value array_of(ValueType element) {
  Value r;
  r.type = ValueType::ARRAY;
  r.array_type = element;
  return r;
}

}  // namespace

Value Value::of_string(std::string v) {
  Value r;
  r.type = ValueType::STRING;
  r.s = std::move(v);
  return r;
}
Value Value::of_u32(uint32_t v) {
  return number(ValueType::U32, v, v);
}
Value Value::of_i32(int32_t v) {
  return number(ValueType::I32, v, v);
}
Value Value::of_u64(uint64_t v) {
  return number(ValueType::U64, static_cast<int64_t>(v), static_cast<double>(v));
}
Value Value::of_f32(float v) {
  return number(ValueType::F32, detail::integer_view(v), v);
}
Value Value::of_bool(bool v) {
  return number(ValueType::BOOL, v, v);
}
Value Value::of_strings(std::vector<std::string> v) {
  Value r = array_of(ValueType::STRING);
  r.strings = std::move(v);
  return r;
}
Value Value::of_f32s(std::vector<float> v) {
  Value r = array_of(ValueType::F32);
  r.numbers.assign(v.begin(), v.end());
  return r;
}
Value Value::of_i32s(std::vector<int32_t> v) {
  Value r = array_of(ValueType::I32);
  r.numbers.assign(v.begin(), v.end());
  return r;
}

void Reader::fail(const std::string& what) const {
  throw std::runtime_error(file_.path().string() + ": " + what);
}

Reader::Reader(const std::filesystem::path& path) : file_(path) {
  try {
    Cursor c(file_.data(), file_.size(), this);
    if (file_.size() < 4) throw std::runtime_error("file too small to be GGUF");
    uint32_t magic = c.read<uint32_t>("magic");
    if (magic != kMagic) throw std::runtime_error("not a GGUF file (bad magic)");
    version_ = c.read<uint32_t>("version");
    if (version_ < 2 || version_ > 3)
      throw std::runtime_error("unsupported GGUF version " + std::to_string(version_) +
                               " (need 2 or 3)");
    uint64_t n_tensors = c.read<uint64_t>("tensor count");
    uint64_t n_kv = c.read<uint64_t>("metadata count");
    // Each entry needs at least 8+4 bytes: a larger count cannot fit in the file.
    if (n_tensors > file_.size() / 8 || n_kv > file_.size() / 8)
      throw std::runtime_error("corrupt header: implausible tensor or metadata count");
    for (uint64_t k = 0; k < n_kv; ++k) {
      std::string key = c.read_string("metadata key");
      auto t = static_cast<ValueType>(c.read<uint32_t>("metadata type"));
      if (static_cast<uint32_t>(t) > 12)
        throw std::runtime_error("metadata '" + key + "' has unknown type " +
                                 std::to_string(static_cast<uint32_t>(t)));
      kv_[key] = read_value(c, t, key);
    }
    // A tensor entry takes at least 32 bytes (name length, rank, one dimension, type, offset).
    if (n_tensors > c.left() / 32)
      throw std::runtime_error("corrupt header: implausible tensor count " +
                               std::to_string(n_tensors));
    tensors_.reserve(n_tensors);
    for (uint64_t k = 0; k < n_tensors; ++k) {
      TensorInfo ti;
      ti.name = c.read_string("tensor name");
      uint32_t nd = c.read<uint32_t>("tensor rank");
      if (nd == 0 || nd > 4)
        throw std::runtime_error("tensor '" + ti.name + "' has rank " + std::to_string(nd));
      for (uint32_t d = 0; d < nd; ++d) ti.dims.push_back(c.read<uint64_t>("tensor shape"));
      ti.type = c.read<uint32_t>("tensor type");
      ti.offset = c.read<uint64_t>("tensor offset");
      if (tensor_index_.count(ti.name))
        throw std::runtime_error("duplicate tensor '" + ti.name + "'");
      tensor_index_[ti.name] = tensors_.size();
      tensors_.push_back(std::move(ti));
    }
    uint64_t alignment = 32;
    if (auto it = kv_.find("general.alignment"); it != kv_.end()) {
      if (!it->second.is_integer() || it->second.i <= 0 || (it->second.i & (it->second.i - 1)))
        throw std::runtime_error("general.alignment must be a power of two");
      alignment = static_cast<uint64_t>(it->second.i);
    }
    uint64_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
    for (auto& ti : tensors_) {
      uint64_t n = 1;
      for (uint64_t d : ti.dims) {
        if (d == 0 || n > (uint64_t{1} << 48) / d)
          throw std::runtime_error("tensor '" + ti.name + "' has an invalid shape");
        n *= d;
      }
      if (!type_info(ti.type))
        throw std::runtime_error("tensor '" + ti.name + "' has unknown type " +
                                 std::to_string(ti.type));
      ti.nbytes = tensor_type_bytes(ti.type, n);
      const TypeInfo& type = *type_info(ti.type);
      if (ti.nbytes == 0)
        throw std::runtime_error("tensor '" + ti.name + "' is " + type.name + " with " +
                                 std::to_string(n) + " values, not a whole number of its " +
                                 std::to_string(type.block) + "-value blocks");
      if (ti.offset % alignment != 0)
        throw std::runtime_error("tensor '" + ti.name + "' is not aligned");
      if (data_start > file_.size() || ti.offset > file_.size() - data_start ||
          ti.nbytes > file_.size() - data_start - ti.offset)
        throw std::runtime_error("truncated file: tensor '" + ti.name + "' (" + type.name + ", " +
                                 std::to_string(n / type.block) + " blocks of " +
                                 std::to_string(type.bytes) +
                                 " bytes = " + std::to_string(ti.nbytes) + ") at data offset " +
                                 std::to_string(ti.offset) + " extends past the end (" +
                                 std::to_string(file_.size()) + " bytes)");
      ti.data = file_.data() + data_start + ti.offset;
    }
    // A tensor's data ends before the next one begins: a header whose shape promises more blocks
    // than were written would otherwise read its neighbour's bytes as weights.
    std::vector<const TensorInfo*> by_offset;
    for (const auto& ti : tensors_) by_offset.push_back(&ti);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (size_t k = 0; k + 1 < by_offset.size(); ++k) {
      const TensorInfo& a = *by_offset[k];
      const TensorInfo& b = *by_offset[k + 1];
      if (b.offset - a.offset < a.nbytes) {
        const TypeInfo& type = *type_info(a.type);
        throw std::runtime_error("tensor '" + a.name + "' (" + type.name + ") needs " +
                                 std::to_string(a.nbytes) + " bytes (" +
                                 std::to_string(a.nbytes / type.bytes) + " blocks of " +
                                 std::to_string(type.bytes) + ") for its shape, but tensor '" +
                                 b.name + "' starts " + std::to_string(b.offset - a.offset) +
                                 " bytes after it: the block count does not match the shape");
      }
    }
  } catch (const std::bad_alloc&) {
    fail("out of memory reading the header (a corrupt size or count?)");
  } catch (const std::exception& e) {
    // Also length_error and the like: whatever a corrupt header provokes, the user learns which
    // file it was.
    fail(e.what());
  }
}

const Value* Reader::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const TensorInfo* Reader::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::string Reader::get_string(const std::string& key) const {
  const Value* v = find(key);
  if (!v) fail("missing metadata '" + key + "'");
  if (v->type != ValueType::STRING) fail("metadata '" + key + "' is not a string");
  return v->s;
}
std::string Reader::get_string(const std::string& key, const std::string& def) const {
  const Value* v = find(key);
  return v && v->type == ValueType::STRING ? v->s : def;
}
int64_t Reader::get_int(const std::string& key) const {
  const Value* v = find(key);
  if (!v) fail("missing metadata '" + key + "'");
  if (!v->is_integer()) fail("metadata '" + key + "' is not an integer");
  return v->i;
}
int64_t Reader::get_int(const std::string& key, int64_t def) const {
  const Value* v = find(key);
  return v && v->is_integer() ? v->i : def;
}
double Reader::get_float(const std::string& key) const {
  const Value* v = find(key);
  if (!v) fail("missing metadata '" + key + "'");
  if (!v->is_float() && !v->is_integer()) fail("metadata '" + key + "' is not a number");
  return v->f;
}
double Reader::get_float(const std::string& key, double def) const {
  const Value* v = find(key);
  return v && (v->is_float() || v->is_integer()) ? v->f : def;
}
bool Reader::get_bool(const std::string& key, bool def) const {
  const Value* v = find(key);
  return v && v->is_integer() ? v->i != 0 : def;
}
const std::vector<std::string>& Reader::get_strings(const std::string& key) const {
  const Value* v = find(key);
  if (!v) fail("missing metadata '" + key + "'");
  if (v->type != ValueType::ARRAY || v->array_type != ValueType::STRING)
    fail("metadata '" + key + "' is not an array of strings");
  return v->strings;
}
const std::vector<double>& Reader::get_numbers(const std::string& key) const {
  const Value* v = find(key);
  if (!v) fail("missing metadata '" + key + "'");
  if (v->type != ValueType::ARRAY || v->array_type == ValueType::STRING ||
      v->array_type == ValueType::ARRAY)
    fail("metadata '" + key + "' is not a numeric array");
  return v->numbers;
}

}  // namespace sandwich::engine::gguf
