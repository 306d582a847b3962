// KV traffic of one engine step under per-layer attention windows (planner.h, KvTraffic).
// A sliding-window layer attends to, and so reads, at most its last `window` tokens
// (Mistral 7B, arXiv 2310.06825 §2 "Sliding Window Attention"; Gemma 2, arXiv 2408.00118
// §2, alternates 4096-token local and global layers). vLLM V1's SlidingWindowManager
// (vllm/v1/core/single_type_kv_cache_manager.py) frees only blocks that have left the
// window, so every new token is still written once per layer.
// DeepSeek-V4 (flops.cpp names the rules and their vLLM sources): a decode step of a
// sequence holding C tokens reads, in a layer of compress ratio r, its window's
// min(C, sliding_window) latents and the compressed latents it attends to (floor(C / 128)
// at r = 128; at r = 4 the top min(index_topk, floor(C / 4)) after the indexer has read
// all floor(C / 4) of its keys); each TP rank reads them whole (one K=V head, and the
// replicated indexer). The compressors' fp32 states (a fixed coff x r rows per request,
// read when a group completes) are not counted.
#include <algorithm>
#include <string>

#include "planner/checked.h"
#include "planner/planner.h"

namespace kvplan {

namespace {
// Sum over query positions p = a+1 .. a+c of min(p, w) (w = 0: no window).
double window_pairs(double a, double c, double w) {
  if (c <= 0) return 0;
  const double b = a + c;
  const auto sum = [](double x, double y) { return (x + y) * (y - x + 1) / 2; };  // x..y
  if (w <= 0 || b <= w) return sum(a + 1, b);
  if (a >= w) return c * w;
  return sum(a + 1, w) + (b - w) * w;
}
}  // namespace

KvTraffic::KvTraffic(const ModelConfig& m, const ServingOptions& o) {
  const int64_t per_stage = detail::ceil_div(m.num_layers, std::max<int64_t>(1, o.pp));
  const int64_t last = std::min(m.num_layers, per_stage);
  for (int64_t l = 0; l < last; ++l) {
    const int64_t w = m.layer_window.empty() ? 0 : m.layer_window[static_cast<size_t>(l)];
    auto it = std::find_if(groups_.begin(), groups_.end(), [w](const Group& g) { return g.window == w; });
    if (it == groups_.end()) groups_.push_back({w, 1});
    else it->layers += 1;
    windowed_ = windowed_ || w > 0;
  }
  layers_ = static_cast<double>(std::max<int64_t>(1, last));
  // Under DCP a GPU reads and writes only the tokens it holds, one in dcp.
  bytes_per_token_ = static_cast<double>(kv_bytes_per_token_per_gpu(m, o)) / static_cast<double>(o.dcp);
  if (m.is_csa()) {
    for (int64_t l = 0; l < last; ++l) csa_ratios_.push_back(m.compress_ratio(l));
    csa_window_ = m.csa_window, csa_topk_ = m.index_topk;
    csa_entry_bytes_ = static_cast<double>(csa_entry_bytes(m));
    csa_index_bytes_ = static_cast<double>(csa_index_bytes(m));
    model_ = m.name;
  }
}

void KvTraffic::refuse_csa() const {
  throw InputError(model_, "compress_ratios",
                   "a model without compressed sparse attention for steps of sequences of different lengths (the "
                   "simulator, the sizing search, speculative decoding): DeepSeek-V4's window, compressed and indexer "
                   "keys are priced for one prefill or one decode step of equal sequences only (kvplan plan)",
                   "DeepSeek-V4's compress ratios");
}

double KvTraffic::decode_read_bytes(int64_t context) const {
  if (csa_ratios_.empty()) return bytes_per_token_ * decode_keys(context);
  double bytes = 0;
  for (const int64_t r : csa_ratios_) {
    bytes += static_cast<double>(std::min(context, csa_window_)) * csa_entry_bytes_;
    if (r == 1) continue;
    const int64_t entries = context / r;
    bytes += static_cast<double>(r == 4 ? std::min(entries, csa_topk_) : entries) * csa_entry_bytes_;
    if (r == 4) bytes += static_cast<double>(entries) * csa_index_bytes_;
  }
  return bytes;
}

double KvTraffic::decode_keys(int64_t context) const {
  if (!csa_ratios_.empty()) refuse_csa();
  double keys = 0;
  for (const Group& g : groups_)
    keys += g.layers * static_cast<double>(g.window > 0 ? std::min(context, g.window) : context);
  return keys / layers_;
}

double KvTraffic::prefill_pairs(int64_t cached, int64_t chunk) const {
  if (!csa_ratios_.empty()) refuse_csa();
  double pairs = 0;
  for (const Group& g : groups_)
    pairs += g.layers * window_pairs(static_cast<double>(cached), static_cast<double>(chunk),
                                     static_cast<double>(g.window));
  return pairs / layers_;
}

double kv_decode_read_bytes_per_gpu(const ModelConfig& m, const ServingOptions& o, int64_t context) {
  return KvTraffic(m, o).decode_read_bytes(context);
}

}  // namespace kvplan
