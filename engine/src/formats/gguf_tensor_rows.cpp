#include "formats/gguf_tensor_rows.h"

#include <omp.h>

#include <cmath>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/quant_validate.h"
#include "kernels/quantize.h"

namespace sandwich::engine {

void add_tensor_rows(gguf::Writer& w, const std::string& name, uint32_t type, int64_t rows,
                     int64_t cols, RowSource source, int threads) {
  std::vector<uint64_t> dims =
      cols ? std::vector<uint64_t>{static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)}
           : std::vector<uint64_t>{static_cast<uint64_t>(rows)};
  w.add_tensor(name, type, dims, [=](uint8_t* dst, uint64_t) {
    const int team = threads > 0 ? threads : omp_get_max_threads();
    const int64_t width = cols ? cols : rows, n_rows = cols ? rows : 1;
    const uint64_t row_bytes = gguf::tensor_type_bytes(type, static_cast<uint64_t>(width));
    const auto q = kernels::qtype_from_ggml(type);
    const kernels::DType plain = type == 0   ? kernels::DType::F32
                                 : type == 1 ? kernels::DType::F16
                                             : kernels::DType::BF16;
    if (row_bytes == 0 || (!q && type != 0 && type != 1 && type != 30))
      throw std::runtime_error("tensor '" + name + "': cannot write " +
                               gguf::tensor_type_name(type) + " rows of " + std::to_string(width));
    std::mutex mu;
    std::exception_ptr error;
    int64_t bad_row = -1;
    std::string bad_what;
    auto fail = [&](int64_t r, std::string what) {
      std::lock_guard lock(mu);
      if (bad_row < 0 || r < bad_row) {
        bad_row = r;
        bad_what = std::move(what);
      }
    };
    constexpr int64_t kChunk = 16;
#pragma omp parallel for schedule(dynamic) num_threads(team)
    for (int64_t r0 = 0; r0 < n_rows; r0 += kChunk) {
      const int64_t r1 = std::min(n_rows, r0 + kChunk);
      std::vector<float> buf(static_cast<size_t>((r1 - r0) * width));
      try {
        source(r0, r1, buf.data());
      } catch (...) {
        std::lock_guard lock(mu);
        if (!error) error = std::current_exception();
        continue;
      }
      for (int64_t r = r0; r < r1; ++r) {
        const float* x = buf.data() + (r - r0) * width;
        uint8_t* out = dst + static_cast<uint64_t>(r) * row_bytes;
        bool finite = true;
        for (int64_t c = 0; c < width && finite; ++c) finite = std::isfinite(x[c]);
        if (!finite) {
          fail(r, "holds a NaN or infinite value");
          continue;
        }
        if (!q) {
          for (int64_t c = 0; c < width; ++c)
            kernels::store_from_f32(out, static_cast<size_t>(c), plain, x[c]);
          continue;
        }
        kernels::quantize_ref(*q, x, out, width);
        const int64_t blocks = width / kernels::qtype_info(*q).block_elems;
        if (const int64_t b = kernels::find_nonfinite_scale(*q, out, blocks); b >= 0)
          fail(r, "block " + std::to_string(b) + " holds values too large for " +
                      gguf::tensor_type_name(type) + "'s f16 scales");
      }
    }
    if (error) std::rethrow_exception(error);
    if (bad_row >= 0)
      throw std::runtime_error("tensor '" + name + "' row " + std::to_string(bad_row) + " " +
                               bad_what);
  });
}

}  // namespace sandwich::engine

namespace sandwich::engine {

void write_atomically(const gguf::Writer& w, const std::filesystem::path& out) {
  std::filesystem::path tmp = out;
  tmp += ".partial";
  try {
    w.write(tmp);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::filesystem::rename(tmp, out);
}

}  // namespace sandwich::engine
