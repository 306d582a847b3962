// kvplan planner: what each serving engine can actually run. kvplan models formats no
// engine ships (int2/int4 KV caches, KIVI, KVQuant, per-token metadata); a row outside
// an engine's table is a what-if of kvplan's own, and `kvplan size` searches only
// deployable options unless asked for what-ifs. Sources and versions: docs/engines.md
// ("What each engine runs") and support.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/types.h"

namespace kvplan {

struct EngineSupport {
  Engine engine = Engine::vllm;
  std::string_view name;     //!< "vLLM"
  std::string_view version;  //!< the release the table was read from
  std::string_view source;   //!< file and symbol in that release
  std::vector<DType> kv_dtypes;         //!< cache element types it allocates
  std::vector<WeightQuant> weights;     //!< weight formats it loads
  //! KV metadata layouts: every engine here stores a quantized cache with per-tensor
  //! scales only, which is kvplan's `raw`; none implements per-token, KIVI or KVQuant.
  std::vector<KvQuant> kv_quants{KvQuant::raw};
};

//! The real engines (vLLM, SGLang, TensorRT-LLM), in that order.
const std::vector<EngineSupport>& engine_support_table();
//! Why `o` cannot run on `o.engine` (for `ideal`: on none of the real engines), or
//! nullopt when it can. The text names the format, the engine, its version and source.
std::optional<std::string> what_if_reason(const ModelConfig& m, const ServingOptions& o);

}  // namespace kvplan
