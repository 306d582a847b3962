// Check 2: decode attention over a paged KV cache, one kernel for MHA, GQA and MQA
// (parameterized by the group size n_h / n_kv). CPU reference here; the CUDA kernel
// (paged_attention.cu) splits each sequence into chunks (FlashDecoding) and merges them.
#pragma once

#include <cstdint>
#include <vector>

namespace kvplan::gv {

//! A paged KV cache of one layer, vLLM-style blocks.
struct PagedKvShape {
  int64_t num_blocks = 0;
  int64_t block_size = 16;   // tokens per block
  int64_t n_kv = 1;          // KV heads
  int64_t head_dim = 128;
  int64_t elems_per_block() const { return block_size * n_kv * head_dim; }
};

struct PagedKvHost {
  PagedKvShape shape;
  std::vector<float> k;  // [num_blocks, block_size, n_kv, head_dim]
  std::vector<float> v;  // [num_blocks, block_size, n_kv, head_dim]
};

//! One decode step's batch: each sequence's block table and length.
struct DecodeBatch {
  int64_t batch = 0;
  int64_t n_heads = 1;                // query heads; n_heads % n_kv == 0
  int64_t max_blocks_per_seq = 0;
  std::vector<int32_t> block_table;   // [batch, max_blocks_per_seq]: physical block ids
  std::vector<int32_t> seq_lens;      // [batch]: keys each sequence attends to
};

//! Bytes and multiply-adds one decode attention call performs (counted by the kernel).
struct AttentionCounts {
  uint64_t kv_bytes_read = 0;  // K and V rows read (each row once per KV head, not per query head)
  uint64_t macs = 0;           // q·k and p·v multiply-adds
};

//! out[b, h, :] = softmax(q[b, h, :] · K[b, h / group]^T / sqrt(d)) V[b, h / group].
//! q: [batch, n_heads, head_dim]; out: [batch, n_heads, head_dim].
//! Each K/V row is loaded once and used by all `group` query heads that share it.
void paged_decode_attention_ref(const PagedKvHost& kv, const DecodeBatch& batch,
                                const std::vector<float>& q, std::vector<float>& out,
                                AttentionCounts* counts = nullptr);

//! The same attention computed as the CUDA kernel does (FlashDecoding): each sequence is
//! cut into splits of `chunk` tokens, each split keeps an online softmax (running max m,
//! running sum l, unnormalized output) over tiles of 32 tokens, and the splits are merged:
//! out = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s.
void paged_decode_attention_split_ref(const PagedKvHost& kv, const DecodeBatch& batch,
                                      const std::vector<float>& q, std::vector<float>& out,
                                      int64_t chunk);

//! The same attention over a contiguous cache k, v: [batch, max_len, n_kv, head_dim].
void contiguous_decode_attention_ref(const std::vector<float>& k, const std::vector<float>& v,
                                     int64_t max_len, int64_t n_kv, int64_t head_dim,
                                     const DecodeBatch& batch, const std::vector<float>& q,
                                     std::vector<float>& out);

//! Builds a batch of `batch` sequences of `seq_len` tokens with random data and a
//! shuffled block table (blocks of different sequences interleave, as after churn).
void make_random_paged_problem(int64_t batch, int64_t seq_len, int64_t n_heads, int64_t n_kv,
                               int64_t head_dim, int64_t block_size, uint64_t seed,
                               PagedKvHost& kv, DecodeBatch& db, std::vector<float>& q);

//! The CUDA kernel's problem (paged_attention.cu): `batch` sequences of `context` tokens,
//! bf16 cache of head_dim 128, FlashDecoding splits of 256 tokens, blocks of 16 tokens.
struct AttentionShape {
  int64_t batch = 0, context = 0, n_heads = 0, n_kv = 0;
};
inline constexpr int64_t kAttentionHeadDim = 128;
inline constexpr int64_t kAttentionChunk = 256;
inline constexpr int64_t kAttentionBlock = 16;

//! What the CUDA kernels move and do for one call, counted from the buffers' element
//! types (bf16 cache, fp32 queries, partials and outputs, int32 block table).
struct AttentionTraffic {
  int64_t splits = 0;          //!< per sequence
  uint64_t kv_bytes = 0;       //!< K and V rows, each once per KV head
  uint64_t partial_bytes = 0;  //!< split outputs and (max, sum), written once and read once: counted x 2
  uint64_t total_bytes = 0;    //!< kv + queries + block table + 2 x partials + outputs
  uint64_t macs = 0;           //!< q.k and p.v multiply-adds
};
AttentionTraffic attention_traffic(const AttentionShape& s);

}  // namespace kvplan::gv
