#pragma once
// GGUF (v2/v3) files: a bounds-checked reader over a memory map, and a streaming writer.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/formats/mapped_file.h"

namespace sandwich::engine::gguf {

enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

// ggml's tensor type ids. Sandwich loads F32, F16, BF16 and Q4_0 ... Q8_K; the others are named
// so that an error can say which type a file holds.
enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
};
// ggml's name, lower case ("q4_k", "bf16"); "type N" for an id it does not know.
std::string tensor_type_name(uint32_t type);
// Bytes for n elements of a type (0 if the type is unknown or n is not a whole number of blocks).
uint64_t tensor_type_bytes(uint32_t type, uint64_t n);
// Elements per block (1 for the plain types; 0 if the type is unknown).
uint32_t tensor_type_block_elems(uint32_t type);

struct Value {
  ValueType type = ValueType::U8;
  ValueType array_type = ValueType::U8;  // element type when type == ARRAY
  int64_t i = 0;                         // integers and bool
  double f = 0;                          // floats (and integers, for convenience)
  std::string s;
  std::vector<std::string> strings;  // string arrays
  std::vector<double> numbers;       // numeric and bool arrays

  static Value of_string(std::string v);
  static Value of_u32(uint32_t v);
  static Value of_i32(int32_t v);
  static Value of_u64(uint64_t v);
  static Value of_f32(float v);
  static Value of_bool(bool v);
  static Value of_strings(std::vector<std::string> v);
  static Value of_f32s(std::vector<float> v);
  static Value of_i32s(std::vector<int32_t> v);
  bool is_integer() const;
  bool is_float() const { return type == ValueType::F32 || type == ValueType::F64; }
};

struct TensorInfo {
  std::string name;
  uint32_t type = 0;
  std::vector<uint64_t> dims;  // ne[0] is the innermost (contiguous) dimension
  uint64_t offset = 0;         // from the start of the data section
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  uint64_t elements() const;
};

class Reader {
 public:
  // Maps and parses the file; throws std::runtime_error("<path>: <what is wrong>") on any defect.
  explicit Reader(const std::filesystem::path& path);

  uint32_t version() const { return version_; }
  const std::filesystem::path& path() const { return file_.path(); }
  uint64_t file_size() const { return file_.size(); }
  const std::map<std::string, Value>& metadata() const { return kv_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  bool has(const std::string& key) const { return kv_.count(key) != 0; }
  const Value* find(const std::string& key) const;
  const TensorInfo* find_tensor(const std::string& name) const;

  // Typed getters; the ones without a default throw naming the key if it is missing or mistyped.
  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& def) const;
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t def) const;
  double get_float(const std::string& key) const;
  double get_float(const std::string& key, double def) const;
  bool get_bool(const std::string& key, bool def) const;
  const std::vector<std::string>& get_strings(const std::string& key) const;
  const std::vector<double>& get_numbers(const std::string& key) const;

 private:
  [[noreturn]] void fail(const std::string& what) const;
  MappedFile file_;
  uint32_t version_ = 0;
  std::map<std::string, Value> kv_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// Writes a GGUF v3 file. Tensor data is produced by a callback at write time, one tensor at a
// time, so multi-GB files never need to be held in memory.
class Writer {
 public:
  using Fill = std::function<void(uint8_t* dst, uint64_t nbytes)>;
  void set(const std::string& key, Value v);
  // dims in GGUF order (ne[0] innermost).
  void add_tensor(const std::string& name, uint32_t type, std::vector<uint64_t> dims, Fill fill);
  void write(const std::filesystem::path& path, uint32_t alignment = 32) const;

 private:
  std::vector<std::pair<std::string, Value>> kv_;
  struct Pending {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> dims;
    Fill fill;
  };
  std::vector<Pending> tensors_;
};

}  // namespace sandwich::engine::gguf
