// Check 2 on the GPU: decode attention over a paged bf16 KV cache, one kernel for MHA,
// GQA and MQA (group G = n_heads / n_kv), split over the sequence (FlashDecoding:
// each block takes `chunk` tokens of one sequence and one KV head, keeps an online
// softmax, and a second kernel merges the splits). Reference: paged_attention_ref.cpp.
//
// Grid (splits, n_kv, batch); a block has G / HG warps, each owning HG query heads of
// the group, so every K/V row a block loads serves all G heads (HBM traffic: each row
// once; the warps of a block share it through L1). Inside a warp, scores put one token
// per lane; values put head_dim / 32 channels per lane.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "gpu_validate/cuda_checks.h"
#include "gpu_validate/cuda_common.cuh"
#include "gpu_validate/paged_attention.h"

namespace kvplan::gv::cuda {

namespace {

constexpr int kHeadDim = int(kAttentionHeadDim);

struct PagedArgs {
  const __nv_bfloat16* k_cache;  // [num_blocks, block_size, n_kv, D]
  const __nv_bfloat16* v_cache;  // [num_blocks, block_size, n_kv, D]
  const int32_t* block_table;    // [batch, max_blocks]
  const int32_t* seq_lens;       // [batch]
  const float* q;                // [batch, n_heads, D]
  float* partial_out;            // [batch, n_heads, splits, D] unnormalized
  float2* partial_ml;            // [batch, n_heads, splits] (running max, running sum)
  int n_heads, n_kv, block_size, max_blocks, chunk, splits;
};

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <int HG>
__global__ void paged_decode_split_kernel(PagedArgs a) {
  constexpr int D = kHeadDim, PER_LANE = D / 32;
  extern __shared__ float sq[];  // [G, D] queries of this KV head's group, pre-scaled
  const int split = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const int G = a.n_heads / a.n_kv;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int len = a.seq_lens[b];
  const int start = split * a.chunk, end = min(len, start + a.chunk);
  const float scale = rsqrtf(float(D));
  for (int i = threadIdx.x; i < G * D; i += blockDim.x)
    sq[i] = a.q[(size_t(b) * a.n_heads + size_t(hk) * G) * D + i] * scale;
  __syncthreads();

  float m[HG], l[HG], acc[HG][PER_LANE];
#pragma unroll
  for (int g = 0; g < HG; ++g) {
    m[g] = -INFINITY;
    l[g] = 0;
#pragma unroll
    for (int k = 0; k < PER_LANE; ++k) acc[g][k] = 0;
  }
  const int32_t* table = a.block_table + size_t(b) * a.max_blocks;
  auto row = [&](const __nv_bfloat16* cache, int t) {
    const int blk = table[t / a.block_size];
    return cache + ((size_t(blk) * a.block_size + t % a.block_size) * a.n_kv + hk) * D;
  };

  for (int tile = start; tile < end; tile += 32) {
    const int t = tile + lane;
    const bool valid = t < end;
    float s[HG];
#pragma unroll
    for (int g = 0; g < HG; ++g) s[g] = 0;
    if (valid) {
      const __nv_bfloat16* krow = row(a.k_cache, t);
#pragma unroll 4
      for (int d0 = 0; d0 < D; d0 += 8) {
        const uint4 raw = *reinterpret_cast<const uint4*>(krow + d0);
        const __nv_bfloat162* k2 = reinterpret_cast<const __nv_bfloat162*>(&raw);
        float kf[8];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float2 f = __bfloat1622float2(k2[i]);
          kf[2 * i] = f.x;
          kf[2 * i + 1] = f.y;
        }
#pragma unroll
        for (int g = 0; g < HG; ++g) {
          const float* qg = sq + (w * HG + g) * D + d0;
#pragma unroll
          for (int i = 0; i < 8; ++i) s[g] += qg[i] * kf[i];
        }
      }
    }
    float p[HG];
#pragma unroll
    for (int g = 0; g < HG; ++g) {
      const float sv = valid ? s[g] : -INFINITY;
      const float m_new = fmaxf(m[g], warp_max(sv));
      p[g] = valid ? __expf(sv - m_new) : 0.0f;
      const float corr = __expf(m[g] - m_new);
      l[g] = l[g] * corr + warp_sum(p[g]);
#pragma unroll
      for (int k = 0; k < PER_LANE; ++k) acc[g][k] *= corr;
      m[g] = m_new;
    }
    // Values: 8 rows loaded before they are used, so 8 loads are in flight per warp.
    const int n_valid = min(32, end - tile);
    for (int j0 = 0; j0 < n_valid; j0 += 8) {
      uint2 raw[8];
#pragma unroll
      for (int u = 0; u < 8; ++u)
        raw[u] = j0 + u < n_valid ? *reinterpret_cast<const uint2*>(row(a.v_cache, tile + j0 + u) + lane * PER_LANE)
                                  : make_uint2(0u, 0u);
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const __nv_bfloat162* v2 = reinterpret_cast<const __nv_bfloat162*>(&raw[u]);
        const float2 f0 = __bfloat1622float2(v2[0]), f1 = __bfloat1622float2(v2[1]);
        const float vf[4] = {f0.x, f0.y, f1.x, f1.y};
#pragma unroll
        for (int g = 0; g < HG; ++g) {
          const float pj = __shfl_sync(0xffffffffu, p[g], j0 + u);  // 0 for lanes past the end
#pragma unroll
          for (int k = 0; k < PER_LANE; ++k) acc[g][k] += pj * vf[k];
        }
      }
    }
  }
#pragma unroll
  for (int g = 0; g < HG; ++g) {
    const int h = hk * G + w * HG + g;
    const size_t idx = (size_t(b) * a.n_heads + h) * a.splits + split;
    if (lane == 0) a.partial_ml[idx] = make_float2(m[g], l[g]);
#pragma unroll
    for (int k = 0; k < PER_LANE; ++k) a.partial_out[idx * D + lane * PER_LANE + k] = acc[g][k];
  }
}

// out [batch, n_heads, D] = merge of the splits' (max, sum, unnormalized output).
__global__ void merge_splits_kernel(const float* partial_out, const float2* partial_ml, float* out, int splits) {
  constexpr int D = kHeadDim;
  const size_t bh = blockIdx.x;
  float M = -INFINITY;
  for (int s = 0; s < splits; ++s) M = fmaxf(M, partial_ml[bh * splits + s].x);
  float L = 0, acc = 0;
  for (int s = 0; s < splits; ++s) {
    const float2 ml = partial_ml[bh * splits + s];
    const float w = ml.y > 0 ? __expf(ml.x - M) : 0.0f;
    L += ml.y * w;
    acc += partial_out[(bh * splits + s) * D + threadIdx.x] * w;
  }
  out[bh * D + threadIdx.x] = acc / L;
}

// Device copies of one problem and the launcher.
struct PagedDevice {
  DeviceBuffer<__nv_bfloat16> k, v;
  DeviceBuffer<int32_t> table, lens;
  DeviceBuffer<float> q, partial_out, out;
  DeviceBuffer<float2> partial_ml;
  PagedArgs args{};
  int batch = 0, n_heads = 0;

  void launch(cudaStream_t stream) {
    const int G = args.n_heads / args.n_kv;
    const int HG = std::min(G, 8);
    const dim3 grid(unsigned(args.splits), unsigned(args.n_kv), unsigned(batch));
    const unsigned threads = unsigned(32 * (G / HG));
    const size_t smem = size_t(G) * kHeadDim * sizeof(float);
    switch (HG) {
      case 1: paged_decode_split_kernel<1><<<grid, threads, smem, stream>>>(args); break;
      case 2: paged_decode_split_kernel<2><<<grid, threads, smem, stream>>>(args); break;
      case 4: paged_decode_split_kernel<4><<<grid, threads, smem, stream>>>(args); break;
      default: paged_decode_split_kernel<8><<<grid, threads, smem, stream>>>(args); break;
    }
    GV_CHECK_LAUNCH();
    merge_splits_kernel<<<unsigned(batch * n_heads), kHeadDim, 0, stream>>>(partial_out.get(), partial_ml.get(), out.get(),
                                                                            args.splits);
    GV_CHECK_LAUNCH();
  }
};

void setup(PagedDevice& d, int batch, int n_heads, int n_kv, int block_size, int max_blocks, int max_len,
           int chunk, size_t num_blocks) {
  if (n_heads % n_kv != 0 || (n_heads / n_kv) > 32 || ((n_heads / n_kv) & (n_heads / n_kv - 1)) != 0)
    throw std::invalid_argument("paged attention: group n_heads / n_kv must be a power of two <= 32");
  d.batch = batch;
  d.n_heads = n_heads;
  const size_t elems = num_blocks * size_t(block_size) * n_kv * kHeadDim;
  d.k = DeviceBuffer<__nv_bfloat16>(elems);
  d.v = DeviceBuffer<__nv_bfloat16>(elems);
  d.table = DeviceBuffer<int32_t>(size_t(batch) * max_blocks);
  d.lens = DeviceBuffer<int32_t>(size_t(batch));
  d.q = DeviceBuffer<float>(size_t(batch) * n_heads * kHeadDim);
  const int splits = (max_len + chunk - 1) / chunk;
  d.partial_out = DeviceBuffer<float>(size_t(batch) * n_heads * splits * kHeadDim);
  d.partial_ml = DeviceBuffer<float2>(size_t(batch) * n_heads * splits);
  d.out = DeviceBuffer<float>(size_t(batch) * n_heads * kHeadDim);
  d.args = {d.k.get(), d.v.get(), d.table.get(), d.lens.get(), d.q.get(), d.partial_out.get(),
            d.partial_ml.get(), n_heads, n_kv, block_size, max_blocks, chunk, splits};
}

// Small problem against the CPU reference (bf16-rounded inputs on both sides).
double validate_against_ref(int n_heads, int n_kv, cudaStream_t stream) {
  PagedKvHost kv;
  DecodeBatch db;
  std::vector<float> q, ref;
  make_random_paged_problem(3, 300, n_heads, n_kv, kHeadDim, 16, 17, kv, db, q);
  db.seq_lens = {300, 171, 1};
  std::vector<uint16_t> kb(kv.k.size()), vb(kv.v.size());
  for (size_t i = 0; i < kb.size(); ++i) {
    kb[i] = float_to_bf16_bits(kv.k[i]);
    kv.k[i] = bf16_bits_to_float(kb[i]);
    vb[i] = float_to_bf16_bits(kv.v[i]);
    kv.v[i] = bf16_bits_to_float(vb[i]);
  }
  paged_decode_attention_ref(kv, db, q, ref);
  PagedDevice d;
  setup(d, 3, n_heads, n_kv, 16, int(db.max_blocks_per_seq), 300, 64, size_t(kv.shape.num_blocks));
  GV_CUDA(cudaMemcpy(d.k.get(), kb.data(), kb.size() * 2, cudaMemcpyHostToDevice));
  GV_CUDA(cudaMemcpy(d.v.get(), vb.data(), vb.size() * 2, cudaMemcpyHostToDevice));
  d.table.upload(db.block_table);
  d.lens.upload(db.seq_lens);
  d.q.upload(q);
  GV_CUDA(cudaDeviceSynchronize());  // uploads went through the legacy stream
  d.launch(stream);
  GV_CUDA(cudaStreamSynchronize(stream));
  const std::vector<float> got = d.out.download();
  double err = 0;
  for (size_t i = 0; i < got.size(); ++i) err = std::max(err, double(std::fabs(got[i] - ref[i])));
  return err;
}

}  // namespace

double paged_attention_error_vs_ref(int64_t n_heads, int64_t n_kv, cudaStream_t stream) {
  return validate_against_ref(int(n_heads), int(n_kv), stream);
}

AttentionRun time_paged_attention(const AttentionShape& s, cudaStream_t stream) {
  constexpr int kBlock = int(kAttentionBlock);
  AttentionRun r;
  r.shape = s;
  r.traffic = attention_traffic(s);
  const int blocks_per_seq = int((s.context + kBlock - 1) / kBlock);
  const size_t num_blocks = size_t(s.batch) * size_t(blocks_per_seq);
  PagedDevice d;
  setup(d, int(s.batch), int(s.n_heads), int(s.n_kv), kBlock, blocks_per_seq, int(s.context), int(kAttentionChunk),
        num_blocks);
  fill_uniform_bf16(d.k.get(), d.k.size(), 1.0f, 101, stream);
  fill_uniform_bf16(d.v.get(), d.v.size(), 1.0f, 102, stream);
  GV_CUDA(cudaStreamSynchronize(stream));
  std::vector<int32_t> table(num_blocks);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937_64(7));
  d.table.upload(table);
  d.lens.upload(std::vector<int32_t>(size_t(s.batch), int32_t(s.context)));
  std::vector<float> q(size_t(s.batch * s.n_heads * kHeadDim));
  std::mt19937_64 rng(8);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (float& x : q) x = nd(rng);
  d.q.upload(q);
  // Uploads go through the legacy stream, which a non-blocking stream does not wait for.
  GV_CUDA(cudaDeviceSynchronize());
  r.time_s = time_gpu_s(stream, 20, [&] { d.launch(stream); });
  return r;
}

}  // namespace kvplan::gv::cuda
