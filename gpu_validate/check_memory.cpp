// Check 4: the checks of one memory run (every backend) and the CPU backend's run on a
// simulated device.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "gpu_validate/checks_internal.h"
#include "gpu_validate/memory.h"

namespace kvplan::gv::detail {

void add_memory_checks(std::vector<Check>& out, const MemoryCheck& r, const std::string& what,
                       const std::string& tag) {
  out.push_back(make_check("memory", "allocations_fit_" + tag, "weights, activations and KV pool allocated",
                           "bool", 1, (r.weights_allocated && r.activations_allocated && r.pool_allocated) ? 1 : 0,
                           Compare::exact, 0,
                           what + ": weights " + std::to_string(r.budget.weights_bytes) + " B, activations " +
                               std::to_string(r.budget.activation_bytes) + " B, pool " +
                               std::to_string(r.capacity.num_blocks) + " blocks x " +
                               std::to_string(r.block_bytes) + " B"));
  out.push_back(make_check("memory", "requests_admitted_" + tag, "requests the block pool admitted",
                           "requests", static_cast<double>(r.capacity.max_concurrent_requests),
                           static_cast<double>(r.admitted_requests), Compare::exact, 0,
                           what + "; " + std::to_string(r.blocks_per_request) + " blocks per request"));
  out.push_back(make_check("memory", "one_more_request_rejected_" + tag, "a further request fits (must not)",
                           "bool", 0, r.next_request_fits ? 1 : 0, Compare::exact, 0, what));
  out.push_back(make_check("memory", "one_more_block_rejected_" + tag, "one block beyond the pool fits (must not)",
                           "bool", 0, r.extra_block_fits ? 1 : 0, Compare::exact, 0, what));
}


// ------------------------------------------------------------------ check 4 on a fake device
void add_memory_cpu_checks(std::vector<Check>& out) {
  const ModelConfig m = llama_1b_like_config();
  GpuSpec g;
  g.name = "simulated-8GiB";
  g.memory_bytes = int64_t{8} << 30;
  g.memory_bandwidth_bytes_per_s = 1e12;
  g.peak_flops.bf16 = g.peak_flops.fp16 = 1e14;
  for (const char* kv : {"bf16", "int4-kivi"}) {
    ServingOptions o;
    if (std::string(kv) == "int4-kivi") {
      o.kv_cache_dtype = DType::int4;
      o.kv_quant = KvQuant::kivi;
    }
    // The simulated device exposes usable memory less the runtime reserve, as a real
    // one does once its context and library workspaces exist.
    const MemoryBudget b = memory_budget(m, g, o);
    SimulatedArena arena(b.usable_bytes - b.reserve_bytes);
    const MemoryCheck r = run_memory_check(m, g, o, 4096, arena);
    add_memory_checks(out, r, std::string("SIMULATED allocator on a fake 8 GiB device (no GPU), ") +
                                  m.name + ", " + kv + ", 4096-token requests",
                      std::string("sim_") + (std::string(kv) == "bf16" ? "bf16" : "int4_kivi"));
  }
}

}  // namespace kvplan::gv::detail
