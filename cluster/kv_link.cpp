// The KV link between a disaggregated layout's pools (cluster/kv_link.h).
#include "cluster/kv_link.h"

#include <algorithm>
#include <string>

namespace kvplan::cluster {

std::string_view to_string(LinkKind k) { return kLinkKindNames.name(k); }
std::optional<LinkKind> parse_link(std::string_view s) { return kLinkKindNames.parse(s); }

int64_t pool_gpus(const PoolSpec& p) { return p.instances * p.options.gpus_per_replica(); }

namespace {

const std::optional<KvLink>& link_of(const KvLinks& l, LinkKind k) {
  switch (k) {
    case LinkKind::nvlink: return l.nvlink;
    case LinkKind::pcie: return l.pcie;
    case LinkKind::rdma: return l.rdma;
    case LinkKind::ethernet: return l.ethernet;
  }
  return l.ethernet;
}

const KvLinks& links_of(const GpuSpec& g) {
  if (!g.kv_links)
    throw InputError("GPU " + g.name, "kv_links",
                     "KV transfer links (gpus_per_node and nvlink/pcie/rdma/ethernet figures; docs/formats.md "
                     "\"GPU file\") to simulate disaggregated serving",
                     "nothing");
  return *g.kv_links;
}

bool has(const GpuSpec& g, LinkKind k) { return link_of(links_of(g), k).has_value(); }

}  // namespace

KvTransferLink choose_link(const DisaggLayout& l) {
  const GpuSpec& gp = l.prefill.gpu;
  const GpuSpec& gd = l.decode.gpu;
  const KvLinks& lp = links_of(gp);
  const KvLinks& ld = links_of(gd);
  KvTransferLink out;
  const int64_t gpus = pool_gpus(l.prefill) + pool_gpus(l.decode);
  const bool fits_one_node = gp.name == gd.name && gpus <= lp.gpus_per_node;
  if (l.link) {
    out.kind = *l.link;
    out.why = "chosen (--kv-link)";
  } else if (fits_one_node && (lp.nvlink || lp.pcie)) {
    out.kind = lp.nvlink ? LinkKind::nvlink : LinkKind::pcie;
    out.why = "both pools' " + std::to_string(gpus) + " " + gp.name + " GPUs fit one node of " +
              std::to_string(lp.gpus_per_node);
  } else {
    out.kind = lp.rdma && ld.rdma ? LinkKind::rdma : LinkKind::ethernet;
    out.why = gp.name != gd.name ? "the pools use different GPU types, so different nodes"
              : fits_one_node    ? "one node, but " + gp.name + " has no GPU-to-GPU link in it"
                                 : "the pools' " + std::to_string(gpus) + " GPUs exceed one node of " +
                                    std::to_string(lp.gpus_per_node);
    if (out.kind == LinkKind::ethernet) out.why += "; ethernet: not both GPU types have an rdma figure";
  }
  out.same_node = out.kind == LinkKind::nvlink || out.kind == LinkKind::pcie;
  for (const GpuSpec* g : {&gp, &gd})
    if (!has(*g, out.kind))
      throw InputError("GPU " + g->name, "kv_links." + std::string(to_string(out.kind)),
                       "the figures of the link the KV crosses ({bytes_per_s, latency_s})", "nothing");
  const KvLink& a = *link_of(lp, out.kind);
  const KvLink& b = *link_of(ld, out.kind);
  // Each GPU of an instance (TP x PP of them) moves its own shard over its own share of
  // the link; the slower side sets the pace.
  out.bytes_per_s =
      std::min(static_cast<double>(l.prefill.options.gpus_per_replica()) * a.bytes_per_s,
               static_cast<double>(l.decode.options.gpus_per_replica()) * b.bytes_per_s);
  out.latency_s = std::max(a.latency_s, b.latency_s);
  return out;
}

}  // namespace kvplan::cluster
