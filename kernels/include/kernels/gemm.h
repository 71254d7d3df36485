#pragma once
// Weight matrices packed once at load, and the GEMM that multiplies activations by them.
// A weight W has n output features (rows) and k input features (columns), as in a Linear layer:
// y[m x n] = x[m x k] * W^T. The packed layout is private to kernels/; callers see only
// PackedWeight and the calls below.
#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/thread_team.h"

namespace sandwich::kernels {

struct PackedWeight {
  DType dtype = DType::F32;  // storage type: F32 or BF16
  int64_t n = 0;             // rows (output features)
  int64_t k = 0;             // columns (input features)
  int32_t panel = 0;         // columns of the packed panels (0: plain row-major)
  size_t bytes = 0;          // size of the packed buffer
  void* data = nullptr;      // set by the owner (usually the shared-memory weight region)
};

// Decides the packed layout of an n x k weight stored as `storage` (F32 or BF16) and fills every
// field but data. The owner allocates `bytes` (64-byte aligned) and sets data.
PackedWeight plan_packed_weight(int64_t n, int64_t k, DType storage);

// Packs a row-major source (n x k elements of src_type, rows src_stride elements apart) into
// w.data, converting to w.dtype. If row_map is given, packed row r comes from source row
// row_map[r] (used to reorder q/k rows for RoPE). Parallel over the team if one is given.
void pack_weight(const PackedWeight& w, const void* src, DType src_type, int64_t src_stride,
                 const int64_t* row_map = nullptr, ThreadTeam* team = nullptr);

// Unpacks row r (k values) as f32: the embedding lookup and the reference path use it.
void unpack_row(const PackedWeight& w, int64_t r, float* out);

enum class Epilogue : uint8_t {
  Store,       // y = x W^T
  Accumulate,  // y += x W^T (residual add fused into the store)
};

struct GemmArgs {
  const float* x = nullptr;  // m rows of k' activations, row stride ldx
  int64_t ldx = 0;
  int64_t m = 0;
  float* y = nullptr;  // m rows of (n1 - n0) outputs, row stride ldy
  int64_t ldy = 0;
  // Output columns [n0, n1) and input columns [k0, k1) of W: a tensor-parallel rank's shard.
  // x holds only the k1 - k0 columns of the shard. n1/k1 < 0 mean "to the end".
  int64_t n0 = 0, n1 = -1;
  int64_t k0 = 0, k1 = -1;
  Epilogue epilogue = Epilogue::Store;
};

// y = x W^T over the team's threads.
void gemm(const PackedWeight& w, const GemmArgs& a, ThreadTeam& team);

// out[m x (n1-n0)] = silu(x Wg^T) * (x Wu^T): the SwiGLU gate/up pair in one pass, so the
// intermediate activations never leave the cache. a.y/a.ldy is the output.
void gemm_silu_mul(const PackedWeight& gate, const PackedWeight& up, const GemmArgs& a,
                   ThreadTeam& team);

}  // namespace sandwich::kernels
