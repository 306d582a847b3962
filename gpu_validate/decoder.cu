// Check 1 on the GPU: the decoder of decoder_ref.cpp (same structure: RMSNorm, fused QKV,
// causal GQA attention over a KV cache, output projection, SwiGLU MLP, LM head on the
// last position), bf16 weights and activations, fp32 residual stream and accumulation.
// Every matrix product is one cublasGemmEx; the multiply-adds of each launch are counted
// on the host from its shape, in the planner's categories. Everything runs on one
// stream, so that whole generations can be captured as CUDA graphs.
#include <algorithm>
#include <cmath>

#include "gpu_validate/cuda_checks.h"
#include "gpu_validate/cuda_common.cuh"

namespace kvplan::gv::cuda {

namespace {

// ---------------------------------------------------------------- kernels
// x [T, h] fp32 = E[ids[first + t]] ; E [V, h] bf16
__global__ void embed_kernel(const int32_t* ids, int first, int h, const __nv_bfloat16* E, float* x) {
  const int t = blockIdx.x;
  const int id = ids[first + t];
  for (int i = threadIdx.x; i < h; i += blockDim.x) x[size_t(t) * h + i] = __bfloat162float(E[size_t(id) * h + i]);
}

// y [rows, h] bf16 = x / rms(x) ; one block per row
__global__ void rmsnorm_kernel(const float* x, __nv_bfloat16* y, int h) {
  const float* xr = x + size_t(blockIdx.x) * h;
  __shared__ float partial[32];
  float ss = 0;
  for (int i = threadIdx.x; i < h; i += blockDim.x) ss += xr[i] * xr[i];
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) partial[0] = v;
  }
  __syncthreads();
  const float inv = rsqrtf(partial[0] / h + 1e-6f);
  for (int i = threadIdx.x; i < h; i += blockDim.x) y[size_t(blockIdx.x) * h + i] = __float2bfloat16(xr[i] * inv);
}

// Copies K and V of T new tokens from qkv [T, q + 2 kv] into the cache [max_len, kv] at past.
__global__ void append_kv_kernel(const __nv_bfloat16* qkv, int q_dim, int kv_dim, int past,
                                 __nv_bfloat16* k_cache, __nv_bfloat16* v_cache) {
  const int t = blockIdx.x;
  const __nv_bfloat16* row = qkv + size_t(t) * (q_dim + 2 * kv_dim);
  for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    k_cache[size_t(past + t) * kv_dim + i] = row[q_dim + i];
    v_cache[size_t(past + t) * kv_dim + i] = row[q_dim + kv_dim + i];
  }
}

// Causal attention of new token t (position past + t) for query head h = blockIdx.y.
// Scores in shared memory [keys]; one warp per key for the dot products.
__global__ void attention_kernel(const __nv_bfloat16* qkv, const __nv_bfloat16* k_cache,
                                 const __nv_bfloat16* v_cache, __nv_bfloat16* out, int past,
                                 int n_heads, int n_kv, int d_h) {
  extern __shared__ float s[];  // [keys]
  __shared__ float red[32];
  const int t = blockIdx.x, h = blockIdx.y, hk = h / (n_heads / n_kv);
  const int q_dim = n_heads * d_h, kv_dim = n_kv * d_h;
  const int keys = past + t + 1;
  const __nv_bfloat16* q = qkv + size_t(t) * (q_dim + 2 * kv_dim) + h * d_h;
  const float scale = rsqrtf(float(d_h));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int j = warp; j < keys; j += warps) {
    const __nv_bfloat16* k = k_cache + size_t(j) * kv_dim + hk * d_h;
    float acc = 0;
    for (int d = lane; d < d_h; d += 32) acc += __bfloat162float(q[d]) * __bfloat162float(k[d]);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) s[j] = acc * scale;
  }
  __syncthreads();
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < keys; j += blockDim.x) mx = fmaxf(mx, s[j]);
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (lane == 0) red[warp] = mx;
  __syncthreads();
  mx = red[0];
  for (int w = 1; w < warps; ++w) mx = fmaxf(mx, red[w]);
  __syncthreads();
  float sum = 0;
  for (int j = threadIdx.x; j < keys; j += blockDim.x) sum += (s[j] = __expf(s[j] - mx));
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) red[warp] = sum;
  __syncthreads();
  sum = 0;
  for (int w = 0; w < warps; ++w) sum += red[w];
  const float inv = 1.0f / sum;
  for (int d = threadIdx.x; d < d_h; d += blockDim.x) {
    float acc = 0;
    for (int j = 0; j < keys; ++j) acc += s[j] * __bfloat162float(v_cache[size_t(j) * kv_dim + hk * d_h + d]);
    out[size_t(t) * q_dim + h * d_h + d] = __float2bfloat16(acc * inv);
  }
}

// act [T, I] = SiLU(gate) * up ; gu [T, 2I] = [gate | up]
__global__ void silu_mul_kernel(const __nv_bfloat16* gu, __nv_bfloat16* act, int T, int I) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < size_t(T) * I; i += size_t{gridDim.x} * blockDim.x) {
    const size_t t = i / I, c = i % I;
    const float g = __bfloat162float(gu[t * 2 * I + c]), u = __bfloat162float(gu[t * 2 * I + I + c]);
    act[i] = __float2bfloat16(g / (1.0f + __expf(-g)) * u);
  }
}

// x [n] fp32 += y [n] bf16
__global__ void add_kernel(float* x, const __nv_bfloat16* y, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    x[i] += __bfloat162float(y[i]);
}

unsigned grid_for(size_t n) { return static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 4096)); }

// ---------------------------------------------------------------- the model
class DecoderGpu {
 public:
  DecoderGpu(const ModelConfig& m, int max_tokens, cublasHandle_t handle, cudaStream_t stream)
      : h_(int(m.hidden_size)), L_(int(m.num_layers)), nh_(int(m.num_heads)), nkv_(int(m.num_kv_heads)),
        dh_(int(m.head_dim)), I_(int(m.intermediate_size)), V_(int(m.vocab_size)), max_(max_tokens),
        cublas_(handle), stream_(stream) {
    q_ = nh_ * dh_;
    kv_ = nkv_ * dh_;
    const size_t hs = size_t(h_);
    embed_ = DeviceBuffer<__nv_bfloat16>(size_t(V_) * hs);
    lm_head_ = DeviceBuffer<__nv_bfloat16>(size_t(V_) * hs);
    wqkv_ = DeviceBuffer<__nv_bfloat16>(size_t(L_) * (q_ + 2 * kv_) * hs);  // [L, q + 2kv, h]
    wo_ = DeviceBuffer<__nv_bfloat16>(size_t(L_) * hs * q_);                // [L, h, q]
    wgu_ = DeviceBuffer<__nv_bfloat16>(size_t(L_) * 2 * I_ * hs);           // [L, 2I, h]
    wd_ = DeviceBuffer<__nv_bfloat16>(size_t(L_) * hs * I_);                // [L, h, I]
    fill_uniform_bf16(embed_.get(), embed_.size(), 1.0f, 1, stream_);
    fill_uniform_bf16(lm_head_.get(), lm_head_.size(), 1.0f / std::sqrt(float(h_)), 2, stream_);
    fill_uniform_bf16(wqkv_.get(), wqkv_.size(), 1.0f / std::sqrt(float(h_)), 3, stream_);
    fill_uniform_bf16(wo_.get(), wo_.size(), 1.0f / std::sqrt(float(q_)), 4, stream_);
    fill_uniform_bf16(wgu_.get(), wgu_.size(), 1.0f / std::sqrt(float(h_)), 5, stream_);
    fill_uniform_bf16(wd_.get(), wd_.size(), 1.0f / std::sqrt(float(I_)), 6, stream_);
    k_cache_ = DeviceBuffer<__nv_bfloat16>(size_t(L_) * max_ * kv_);  // [L, max, kv]
    v_cache_ = DeviceBuffer<__nv_bfloat16>(size_t(L_) * max_ * kv_);
    x_ = DeviceBuffer<float>(size_t(max_) * hs);                      // [T, h]
    xn_ = DeviceBuffer<__nv_bfloat16>(size_t(max_) * hs);             // [T, h]
    qkv_ = DeviceBuffer<__nv_bfloat16>(size_t(max_) * (q_ + 2 * kv_));// [T, q + 2kv]
    attn_ = DeviceBuffer<__nv_bfloat16>(size_t(max_) * q_);           // [T, q]
    o_ = DeviceBuffer<__nv_bfloat16>(size_t(max_) * hs);              // [T, h]
    gu_ = DeviceBuffer<__nv_bfloat16>(size_t(max_) * 2 * I_);         // [T, 2I]
    act_ = DeviceBuffer<__nv_bfloat16>(size_t(max_) * I_);            // [T, I]
    logits_ = DeviceBuffer<float>(size_t(V_));                        // [V]
    ids_ = DeviceBuffer<int32_t>(size_t(max_));
    std::vector<int32_t> ids(static_cast<size_t>(max_));
    for (int i = 0; i < max_; ++i) ids[size_t(i)] = int32_t((i * 7919 + 13) % V_);
    ids_.upload(ids);
    GV_CUDA(cudaDeviceSynchronize());  // fills on stream_, the upload on the legacy stream
    GV_CUDA(cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 std::max(48 * 1024, int((max_ + 1) * sizeof(float)))));
  }

  MacCounts counts;

  //! Positions [first, first + T) of the fixed token sequence, the cache holding [0, first).
  void forward(int first, int T) {
    embed_kernel<<<T, 256, 0, stream_>>>(ids_.get(), first, h_, embed_.get(), x_.get());
    GV_CHECK_LAUNCH();
    for (int l = 0; l < L_; ++l) {
      __nv_bfloat16* kc = k_cache_.get() + size_t(l) * max_ * kv_;
      __nv_bfloat16* vc = v_cache_.get() + size_t(l) * max_ * kv_;
      rmsnorm_kernel<<<T, 256, 0, stream_>>>(x_.get(), xn_.get(), h_);
      GV_CHECK_LAUNCH();
      gemm(xn_.get(), wqkv_.get() + size_t(l) * (q_ + 2 * kv_) * h_, qkv_.get(), CUDA_R_16BF, T, h_, q_ + 2 * kv_, counts.qkv);
      append_kv_kernel<<<T, 256, 0, stream_>>>(qkv_.get(), q_, kv_, first, kc, vc);
      GV_CHECK_LAUNCH();
      attention_kernel<<<dim3(unsigned(T), unsigned(nh_)), 128, size_t(first + T) * sizeof(float), stream_>>>(
          qkv_.get(), kc, vc, attn_.get(), first, nh_, nkv_, dh_);
      GV_CHECK_LAUNCH();
      const uint64_t pairs = uint64_t(T) * uint64_t(first) + uint64_t(T) * uint64_t(T + 1) / 2;
      counts.attn_scores += pairs * uint64_t(q_);
      counts.attn_values += pairs * uint64_t(q_);
      gemm(attn_.get(), wo_.get() + size_t(l) * h_ * q_, o_.get(), CUDA_R_16BF, T, q_, h_, counts.out_proj);
      add_kernel<<<grid_for(size_t(T) * h_), 256, 0, stream_>>>(x_.get(), o_.get(), size_t(T) * h_);
      GV_CHECK_LAUNCH();
      rmsnorm_kernel<<<T, 256, 0, stream_>>>(x_.get(), xn_.get(), h_);
      GV_CHECK_LAUNCH();
      gemm(xn_.get(), wgu_.get() + size_t(l) * 2 * I_ * h_, gu_.get(), CUDA_R_16BF, T, h_, 2 * I_, counts.mlp);
      silu_mul_kernel<<<grid_for(size_t(T) * I_), 256, 0, stream_>>>(gu_.get(), act_.get(), T, I_);
      GV_CHECK_LAUNCH();
      gemm(act_.get(), wd_.get() + size_t(l) * h_ * I_, o_.get(), CUDA_R_16BF, T, I_, h_, counts.mlp);
      add_kernel<<<grid_for(size_t(T) * h_), 256, 0, stream_>>>(x_.get(), o_.get(), size_t(T) * h_);
      GV_CHECK_LAUNCH();
    }
    rmsnorm_kernel<<<1, 256, 0, stream_>>>(x_.get() + size_t(T - 1) * h_, xn_.get(), h_);
    GV_CHECK_LAUNCH();
    gemm(xn_.get(), lm_head_.get(), logits_.get(), CUDA_R_32F, 1, h_, V_, counts.lm_head);
  }

  void generate_cached(int T) { for (int t = 1; t <= T; ++t) forward(t - 1, 1); }
  void generate_naive(int T) { for (int t = 1; t <= T; ++t) forward(0, t); }
  std::vector<float> logits() const {
    GV_CUDA(cudaStreamSynchronize(stream_));
    return logits_.download();
  }

 private:
  // y [T, out] = x [T, in] · W^T, W [out, in] row-major (column-major: y^T = W^T' x^T').
  void gemm(const __nv_bfloat16* x, const __nv_bfloat16* W, void* y, cudaDataType y_type, int T,
            int in, int out, uint64_t& counter) {  // on stream_: cublasSetStream in run_decoder
    const float alpha = 1.0f, beta = 0.0f;
    GV_CUBLAS(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, out, T, in, &alpha, W, CUDA_R_16BF, in, x,
                           CUDA_R_16BF, in, &beta, y, y_type, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    counter += uint64_t(T) * uint64_t(in) * uint64_t(out);
  }

  int h_, L_, nh_, nkv_, dh_, I_, V_, max_, q_ = 0, kv_ = 0;
  cublasHandle_t cublas_;
  cudaStream_t stream_;
  DeviceBuffer<__nv_bfloat16> embed_, lm_head_, wqkv_, wo_, wgu_, wd_, k_cache_, v_cache_;
  DeviceBuffer<float> x_, logits_;
  DeviceBuffer<__nv_bfloat16> xn_, qkv_, attn_, o_, gu_, act_;
  DeviceBuffer<int32_t> ids_;
};

}  // namespace

std::vector<DecodeRun> run_decoder(const ModelConfig& m, const std::vector<int64_t>& Ts, cublasHandle_t handle,
                                   cudaStream_t stream) {
  const int max_T = int(*std::max_element(Ts.begin(), Ts.end()));
  GV_CUBLAS(cublasSetStream(handle, stream));
  DecoderGpu gpu(m, max_T, handle, stream);
  std::vector<DecodeRun> runs;
  for (int64_t T64 : Ts) {
    const int T = int(T64);
    DecodeRun r;
    r.T = T64;
    gpu.counts = {};
    gpu.generate_cached(T);  // counted once, outside the timing
    r.cached_macs = gpu.counts;
    const std::vector<float> lc = gpu.logits();
    gpu.counts = {};
    gpu.generate_naive(T);
    r.naive_macs = gpu.counts;
    const std::vector<float> ln = gpu.logits();
    for (size_t i = 0; i < lc.size(); ++i) {
      r.last_logit_max_abs_diff = std::max(r.last_logit_max_abs_diff, double(std::fabs(lc[i] - ln[i])));
      r.last_logit_max_abs = std::max(r.last_logit_max_abs, double(std::fabs(ln[i])));
    }
    // Graphs: the T steps are captured once and replayed, so the GPU runs the kernels
    // back to back (what an engine with CUDA graphs pays); eager: one host launch each.
    const Graph cached(stream, [&] { gpu.generate_cached(T); });
    const Graph naive(stream, [&] { gpu.generate_naive(T); });
    r.cached_kernels = int64_t(cached.nodes());
    r.naive_kernels = int64_t(naive.nodes());
    const int reps = T <= 64 ? 5 : 2;
    r.cached_graph_s = time_gpu_s(stream, reps, [&] { cached.launch(stream); });
    r.naive_graph_s = time_gpu_s(stream, T <= 64 ? 5 : 1, [&] { naive.launch(stream); });
    r.cached_eager_s = time_gpu_s(stream, reps, [&] { gpu.generate_cached(T); });
    runs.push_back(r);
  }
  return runs;
}

}  // namespace kvplan::gv::cuda
