// kvplan cluster: the link a disaggregated layout's KV crosses between its prefill and
// decode pools (cluster/disagg.h), chosen from the GPUs' kv_links figures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "planner/names.h"
#include "planner/types.h"

namespace kvplan::cluster {

enum class LinkKind { nvlink, pcie, rdma, ethernet };
inline constexpr NameTable<LinkKind, 4> kLinkKindNames{{{
    {"nvlink", LinkKind::nvlink}, {"pcie", LinkKind::pcie}, {"rdma", LinkKind::rdma},
    {"ethernet", LinkKind::ethernet},
}}};
std::string_view to_string(LinkKind k);
//! Parses nvlink|pcie|rdma|ethernet.
std::optional<LinkKind> parse_link(std::string_view s);

//! One pool: `instances` engines of `options.tp` x `options.pp` GPUs of type `gpu`.
struct PoolSpec {
  GpuSpec gpu;
  ServingOptions options;
  int64_t instances = 1;
  std::optional<int64_t> num_blocks;  //!< overrides each instance's KV pool (what-ifs, tests)
};
//! instances x TP x PP.
int64_t pool_gpus(const PoolSpec& p);

struct DisaggLayout {
  PoolSpec prefill, decode;
  //! Forces the link; by default the rule of choose_link().
  std::optional<LinkKind> link;
};

//! The link KV crosses between the pools, per transfer: latency_s + bytes / bytes_per_s.
struct KvTransferLink {
  LinkKind kind = LinkKind::ethernet;
  bool same_node = false;
  double bytes_per_s = 0;  //!< the slower side's: min over the pools of TP x PP x per-GPU link
  double latency_s = 0;    //!< the larger of the two sides'
  std::string why;         //!< the rule that chose it, for reports
};

//! The rule: the pools share a node when both use the same GPU type and all their GPUs
//! (x TP_p PP_p + y TP_d PP_d) fit its kv_links.gpus_per_node; then the GPU's nvlink, else
//! its pcie. Across nodes (or with neither): rdma when both GPU types have it, else
//! ethernet. `layout.link` forces a kind. Throws InputError naming the GPU and the
//! kv_links key when a GPU file lacks the figure needed.
KvTransferLink choose_link(const DisaggLayout& layout);

}  // namespace kvplan::cluster
