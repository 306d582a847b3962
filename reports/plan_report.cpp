#include "reports/plan_report.h"
#include "reports/spec_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

namespace kvplan::reports {

namespace {

nlohmann::json flops_json(const FlopBreakdown& f) {
  return {{"total", f.total()},     {"qkv", f.qkv},           {"attn_scores", f.attn_scores},
          {"attn_values", f.attn_values}, {"out_proj", f.out_proj}, {"mlp", f.mlp},
          {"lm_head", f.lm_head}};
}

nlohmann::json step_json(const StepTime& t) {
  return {{"time_s", t.time_s}, {"compute_s", t.compute_s}, {"memory_s", t.memory_s},
          {"communication_s", t.communication_s}, {"bound", std::string(to_string(t.bound))}};
}

nlohmann::json lora_json(const LoraPlan& l) {
  nlohmann::json modules = nlohmann::json::array();
  for (const LoraModule& m : l.memory.modules)
    modules.push_back({{"module", m.name}, {"instances", m.instances}, {"slices", m.slices},
                       {"lora_a_elements_per_slot", m.a_elems}, {"lora_b_elements_per_slot", m.b_elems}});
  return {{"max_loras", l.memory.slots},
          {"max_lora_rank", l.memory.rank},
          {"max_cpu_loras", l.memory.cpu_slots},
          {"lora_dtype", std::string(to_string(l.memory.dtype))},
          {"modules", modules},
          {"slot_bytes_per_gpu", l.memory.slot_bytes_per_gpu},
          {"lora_bytes_per_gpu", l.memory.bytes_per_gpu},
          {"max_kv_tokens_without_lora", l.kv_tokens_without},
          {"kv_tokens_lost", l.kv_tokens_lost},
          {"max_concurrent_requests_without_lora", l.requests_without},
          {"requests_lost", l.requests_lost},
          {"prefill_lora_s", l.prefill_lora_s},
          {"decode_step_lora_s", l.decode_lora_s},
          {"decode_step_adapters", l.decode_adapters}};
}

//! Any row with LoRA: then its slots and rank columns appear.
bool any_lora(const std::vector<PlanRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const PlanRow& r) { return r.lora.has_value(); });
}

//! Inserts "loras" and "lora rank" after "engine" (column `at`).
void insert_lora(Table& t, const std::vector<PlanRow>& rows, std::ptrdiff_t at) {
  t.header.insert(t.header.begin() + at, {"loras", "lora rank"});
  t.right_align.insert(t.right_align.begin() + at, {true, true});
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& l = rows[i].lora;
    t.rows[i].insert(t.rows[i].begin() + at, {l ? std::to_string(l->memory.slots) : "-", l ? std::to_string(l->memory.rank) : "-"});
  }
}

//! Any row with expert or data parallelism: then the EP and DP columns and keys appear
//! (absent otherwise, so that plans without them print as before).
bool any_ep_dp(const std::vector<PlanRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const PlanRow& r) { return r.options.ep > 1 || r.options.dp > 1; });
}

//! Inserts the EP and DP columns after "pp" (column 3).
void insert_ep_dp(Table& t, const std::vector<PlanRow>& rows) {
  const auto at = static_cast<std::ptrdiff_t>(4);
  t.header.insert(t.header.begin() + at, {"ep", "dp"});
  t.right_align.insert(t.right_align.begin() + at, {true, true});
  for (size_t i = 0; i < rows.size(); ++i)
    t.rows[i].insert(t.rows[i].begin() + at, {std::to_string(rows[i].options.ep), std::to_string(rows[i].options.dp)});
}

//! Any row with decode context parallelism: then the dcp column and keys appear.
bool any_dcp(const std::vector<PlanRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const PlanRow& r) { return r.options.dcp > 1; });
}

//! Inserts the dcp column after "tp" (column 2).
void insert_dcp(Table& t, const std::vector<PlanRow>& rows) {
  const auto at = static_cast<std::ptrdiff_t>(3);
  t.header.insert(t.header.begin() + at, "dcp");
  t.right_align.insert(t.right_align.begin() + at, true);
  for (size_t i = 0; i < rows.size(); ++i) t.rows[i].insert(t.rows[i].begin() + at, std::to_string(rows[i].options.dcp));
}

// What decode context parallelism changed against the same options at DCP 1.
std::string dcp_text(const Plan& p, const ServingOptions& o) {
  if (!p.without_dcp) return {};
  const Plan::WithoutDcp& b = *p.without_dcp;
  const auto ratio = [](int64_t a, int64_t c) { return c > 0 ? fmt::format(" ({:.2f}×)", static_cast<double>(a) / static_cast<double>(c)) : std::string(); };
  std::string s = fmt::format(
      "Decode context parallel {} (groups of {} of the {} TP GPUs; docs/long-context.md): each GPU holds one token in {}\n",
      o.dcp, o.dcp, o.tp, o.dcp);
  s += fmt::format("  KV tokens        {:>14} vs {:>14} at DCP 1{}\n", count(p.capacity.max_kv_tokens),
                   count(b.capacity.max_kv_tokens), ratio(p.capacity.max_kv_tokens, b.capacity.max_kv_tokens));
  s += fmt::format("  requests of {}  {:>10} vs {:>14} at DCP 1\n", count(p.context_tokens),
                   count(p.capacity.max_concurrent_requests), count(b.capacity.max_concurrent_requests));
  s += fmt::format("  decode step      {:>14} vs {:>14} at DCP 1{} (batch {}): {} vs {} read per GPU (weights and KV); the merge adds {} "
                   "({} per GPU per layer)\n",
                   seconds(p.decode_time.time_s), seconds(b.decode_time.time_s), b.fits ? "" : " (no fit there)", p.batch,
                   gb(static_cast<int64_t>(p.decode_time.bytes)), gb(static_cast<int64_t>(b.decode_time.bytes)),
                   seconds(p.decode_time.dcp_communication_s), bytes_binary(static_cast<int64_t>(p.dcp_bytes_per_layer)));
  return s;
}

nlohmann::json dcp_json(const Plan& p, const ServingOptions& o) {
  if (!p.without_dcp) return nullptr;
  const Plan::WithoutDcp& b = *p.without_dcp;
  return {{"decode_context_parallel_size", o.dcp},
          {"merge_bytes_per_layer_per_gpu", p.dcp_bytes_per_layer},
          {"merge_s", p.decode_time.dcp_communication_s},
          {"without",
           {{"max_kv_tokens", b.capacity.max_kv_tokens},
            {"max_concurrent_requests", b.capacity.max_concurrent_requests},
            {"num_blocks", b.capacity.num_blocks},
            {"kv_bytes_per_token_per_gpu", b.kv_bytes_per_token_per_gpu},
            {"decode_step_s", b.decode_time.time_s},
            {"decode_step_bytes_per_gpu", b.decode_time.bytes},
            {"fits", b.fits}}}};
}

std::string kv_quant_label(const PlanRow& r) {
  return dtype_bits(r.plan.kv_dtype) >= 16 ? "-" : std::string(to_string(r.options.kv_quant));
}

// The host KV tier, after what paging bought: how many prefix tokens sit below the pool.
std::string host_tier_text(const Plan& p, const ServingOptions& o) {
  if (!p.host_tier) return {};
  const HostKvTier& t = *p.host_tier;
  const int64_t pool_tokens = p.capacity.num_blocks * kv_block_tokens(o);
  return fmt::format(
      "Host KV tier ({}): {} per GPU = {} blocks of {} per GPU = {} prefix tokens{}; a hit loads its "
      "blocks over the host link (docs/kv-tiers.md)\n",
      t.sized_by, gib(t.bytes_per_gpu), count(t.blocks), bytes_binary(t.block_bytes_per_gpu),
      count(t.tokens),
      pool_tokens > 0 ? fmt::format(" ({:.1f}× the GPU pool's {})", static_cast<double>(t.blocks) /
                                                                        static_cast<double>(p.capacity.num_blocks),
                                    count(pool_tokens))
                      : "") +
         (t.disk_blocks > 0
              ? fmt::format("Disk KV tier (--kv-disk-size {:g} GiB): {} per GPU = {} blocks = {} prefix tokens below "
                            "the host tier; a hit reads its blocks from the disk, then over the host link\n",
                            static_cast<double>(o.kv_disk_bytes) / kBytesPerGiB, gib(t.disk_bytes_per_gpu),
                            count(t.disk_blocks), count(t.disk_tokens))
              : std::string()) +
         (t.remote_blocks > 0
              ? fmt::format("Remote KV tier (--kv-remote-size {:g} GiB): {} blocks of {} (the engine's {} GPU "
                            "shard{}) = {} prefix tokens for the whole fleet, shared by its replicas; a hit fetches "
                            "its blocks over the network into host memory, then over the host link\n",
                            static_cast<double>(o.kv_remote_bytes) / kBytesPerGiB, count(t.remote_blocks),
                            bytes_binary(t.block_bytes_per_gpu * o.tp * o.pp), o.tp * o.pp, o.tp * o.pp == 1 ? "" : "s",
                            count(t.remote_tokens))
              : std::string());
}

nlohmann::json host_tier_json(const Plan& p, const ServingOptions& o) {
  if (!p.host_tier) return nullptr;
  const HostKvTier& t = *p.host_tier;
  return {{"sized_by", t.sized_by},
          {"kv_offloading_bytes", o.kv_offloading_bytes},
          {"bytes_per_gpu", t.bytes_per_gpu},
          {"block_bytes_per_gpu", t.block_bytes_per_gpu},
          {"blocks", t.blocks},
          {"tokens", t.tokens},
          {"disk", t.disk_blocks > 0 ? nlohmann::json{{"kv_disk_bytes", o.kv_disk_bytes},
                                                      {"bytes_per_gpu", t.disk_bytes_per_gpu},
                                                      {"blocks", t.disk_blocks},
                                                      {"tokens", t.disk_tokens}}
                                     : nlohmann::json(nullptr)},
          {"remote", t.remote_blocks > 0 ? nlohmann::json{{"kv_remote_bytes", o.kv_remote_bytes},
                                                          {"block_bytes", t.block_bytes_per_gpu * o.tp * o.pp},
                                                          {"blocks", t.remote_blocks},
                                                          {"tokens", t.remote_tokens}}
                                         : nlohmann::json(nullptr)}};
}
}  // namespace

nlohmann::json plan_json(const std::vector<PlanRow>& rows) {
  nlohmann::json out = {{"schema", "kvplan.plan/1"},
                        {"conventions", {{"flops", "2 FLOPs per multiply-add"},
                                         {"bytes", "integers; " + std::string(kSizeUnitsLegend)},
                                         {"memory", "per GPU, except kv_bytes_per_token and kv_bytes_per_request (whole model)"}}}};
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rows) {
    const Plan& p = r.plan;
    const ServingOptions& o = r.options;
    const Calibration& cal = o.calibration;
    list.push_back({
        {"model", r.model},
        {"gpu", r.gpu},
        {"tp", o.tp},
        {"pp", o.pp},
        {"context_tokens", p.context_tokens},
        {"batch", p.batch},
        {"kv_dtype", std::string(to_string(p.kv_dtype))},
        {"kv_quant", std::string(to_string(o.kv_quant))},
        {"kv_heads", r.kv_heads},
        {"weight_dtype", p.weight_format},
        {"engine", std::string(to_string(o.engine))},
        {"what_if", r.what_if.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.what_if)},
        {"kv_cache", o.kv_cache},
        {"params", p.params},
        {"block_size", o.block_size},
        {"gpu_memory_utilization", o.gpu_memory_utilization},
        {"memory",
         {{"gpu_bytes", p.memory.gpu_bytes},
          {"usable_bytes", p.memory.usable_bytes},
          {"weights_bytes", p.memory.weights_bytes},
          {"activation_bytes", p.memory.activation_bytes},
          {"reserve_bytes", p.memory.reserve_bytes},
          {"kv_budget_bytes", p.memory.kv_budget_bytes},
          {"kv_bytes_per_token", p.kv_bytes_per_token},
          {"kv_bytes_per_token_per_gpu", p.kv_bytes_per_token_per_gpu},
          {"kv_bytes_per_request", p.kv_bytes_per_request},
          {"state_bytes_per_request", p.state_bytes_per_request},
          {"tower_bytes", p.memory.tower_bytes},
          {"lora_bytes", p.memory.lora_bytes},
          {"note", p.memory.note}}},
        {"capacity",
         {{"max_concurrent_requests", p.capacity.max_concurrent_requests},
          {"max_kv_tokens", p.capacity.max_kv_tokens},
          {"num_blocks", p.capacity.num_blocks},
          {"limited_by", p.capacity.limited_by},
          {"fits", p.fits},
          {"shared_prefix", p.shared_prefix ? nlohmann::json{{"prefix_tokens", p.shared_prefix->prefix_tokens},
                                                             {"shared_blocks", p.shared_prefix->shared_blocks},
                                                             {"blocks_per_request", p.shared_prefix->blocks_per_request},
                                                             {"max_concurrent_requests",
                                                              p.shared_prefix->max_concurrent_requests}}
                                            : nlohmann::json(nullptr)}}},
        {"paging", paging_json(p)},
        {"host_kv_tier", host_tier_json(p, r.options)},
        {"decode_context_parallel", dcp_json(p, r.options)},
        {"speculative", r.spec ? spec_json(*r.spec) : nlohmann::json(nullptr)},
        {"lora", r.lora ? lora_json(*r.lora) : nlohmann::json(nullptr)},
        {"flops",
         {{"prefill", p.prefill.total()},
          {"decode_step", p.decode_step.total()},
          {"generate_cached", p.generate_cached.total()},
          {"generate_naive", p.generate_naive.total()},
          {"seed_naive_projection_1flop_per_mac", p.seed_naive_projection_flops},
          {"breakdown",
           {{"prefill", flops_json(p.prefill)},
            {"decode_step", flops_json(p.decode_step)},
            {"generate_cached", flops_json(p.generate_cached)},
            {"generate_naive", flops_json(p.generate_naive)}}}}},
        {"latency",
         {{"prefill_s", p.prefill_time.time_s},
          {"decode_step_s", p.decode_time.time_s},
          {"bound", std::string(to_string(p.decode_time.bound))},
          {"prefill_bound", std::string(to_string(p.prefill_time.bound))},
          {"prefill", step_json(p.prefill_time)},
          {"decode_step", step_json(p.decode_time)},
          {"scale_out_note", p.scale_out_note}}},
        {"engine_log", r.engine_log},
        {"calibration",
         {{"measured", cal.measured},
          {"device", cal.measured ? cal.device : "documented defaults"},
          {"bandwidth_efficiency", cal.bandwidth_efficiency},
          {"prefill_flops_efficiency", cal.prefill_flops_efficiency},
          {"decode_flops_efficiency", cal.decode_flops_efficiency}}},
    });
  }
  if (any_ep_dp(rows))
    for (size_t i = 0; i < rows.size(); ++i) {
      list[i]["ep"] = rows[i].options.ep;
      list[i]["dp"] = rows[i].options.dp;
    }
  if (any_dcp(rows))
    for (size_t i = 0; i < rows.size(); ++i) list[i]["dcp"] = rows[i].options.dcp;
  out["rows"] = list;
  return out;
}

Table plan_table(const std::vector<PlanRow>& rows, bool mark_no_fit) {
  Table t;
  t.header = {"model", "gpu", "tp", "pp", "context", "batch", "weights", "kv", "kv quant", "engine",
              "KV/token", "KV/request", "weights/GPU", "KV pool/GPU", "max KV tokens", "max requests",
              "requests ×", "prefill", "decode step", "bound"};
  t.right_align = {false, false, true, true, true, true, false, false, false, false,
                   true, true, true, true, true, true, true, true, true, false};
  for (const auto& r : rows) {
    const Plan& p = r.plan;
    const ServingOptions& o = r.options;
    const std::string& weights = p.weight_format;
    // Against the first row of the same model on the same GPU: another model's or GPU's
    // requests are not the same requests.
    const PlanRow& first = *std::find_if(rows.begin(), rows.end(),
                                         [&](const PlanRow& x) { return x.model == r.model && x.gpu == r.gpu; });
    const auto base = static_cast<double>(first.plan.capacity.max_concurrent_requests);
    const double ratio = base > 0 ? static_cast<double>(p.capacity.max_concurrent_requests) / base : 0;
    t.rows.push_back({r.model, r.gpu, std::to_string(o.tp), std::to_string(o.pp), count(p.context_tokens),
                      std::to_string(p.batch), weights, o.kv_cache ? std::string(to_string(p.kv_dtype)) : "none",
                      kv_quant_label(r), std::string(to_string(o.engine)), bytes_binary(p.kv_bytes_per_token),
                      gb(p.kv_bytes_per_request), gb(p.memory.weights_bytes), gb(p.memory.kv_budget_bytes),
                      count(p.capacity.max_kv_tokens), count(p.capacity.max_concurrent_requests),
                      base > 0 ? fmt::format("{:.2f}×", ratio) : "-", seconds(p.prefill_time.time_s),
                      seconds(p.decode_time.time_s) + (p.fits || !mark_no_fit ? "" : " (no fit)"),
                      std::string(to_string(p.decode_time.bound))});
  }
  // --kv-heads rows differ only in the head count: show it beside the KV dtype.
  if (std::any_of(rows.begin(), rows.end(), [](const PlanRow& r) { return r.options.kv_heads.has_value(); })) {
    const auto at = static_cast<std::ptrdiff_t>(9);  // after "kv quant"
    t.header.insert(t.header.begin() + at, "kv heads");
    t.right_align.insert(t.right_align.begin() + at, true);
    for (size_t i = 0; i < rows.size(); ++i) t.rows[i].insert(t.rows[i].begin() + at, std::to_string(rows[i].kv_heads));
  }
  if (any_lora(rows)) insert_lora(t, rows, std::find(t.header.begin(), t.header.end(), "engine") - t.header.begin() + 1);
  if (any_ep_dp(rows)) insert_ep_dp(t, rows);
  if (any_dcp(rows)) insert_dcp(t, rows);
  return t;
}

Table plan_table_raw(const std::vector<PlanRow>& rows) {
  Table t;
  t.header = {"model", "gpu", "tp", "pp", "context_tokens", "batch", "weight_dtype", "kv_dtype", "kv_quant",
              "kv_heads", "engine", "kv_bytes_per_token", "kv_bytes_per_request", "weights_bytes_per_gpu",
              "kv_pool_bytes_per_gpu", "max_kv_tokens", "max_requests", "requests_ratio_to_first_row",
              "prefill_s", "decode_step_s", "bound"};
  t.right_align.assign(t.header.size(), false);
  const double base = rows.empty() ? 0 : static_cast<double>(rows.front().plan.capacity.max_concurrent_requests);
  for (const auto& r : rows) {
    const Plan& p = r.plan;
    const ServingOptions& o = r.options;
    const std::string& weights = p.weight_format;
    const auto i = [](int64_t v) { return std::to_string(v); };
    t.rows.push_back({r.model, r.gpu, i(o.tp), i(o.pp), i(p.context_tokens), i(p.batch), weights,
                      o.kv_cache ? std::string(to_string(p.kv_dtype)) : "none",
                      dtype_bits(p.kv_dtype) >= 16 ? "" : std::string(to_string(o.kv_quant)), i(r.kv_heads),
                      std::string(to_string(o.engine)), i(p.kv_bytes_per_token), i(p.kv_bytes_per_request),
                      i(p.memory.weights_bytes), i(p.memory.kv_budget_bytes), i(p.capacity.max_kv_tokens),
                      i(p.capacity.max_concurrent_requests),
                      base > 0 ? raw_number(static_cast<double>(p.capacity.max_concurrent_requests) / base) : "",
                      raw_number(p.prefill_time.time_s), raw_number(p.decode_time.time_s), std::string(to_string(p.decode_time.bound))});
  }
  if (any_lora(rows)) {
    t.header.insert(t.header.end(), {"max_loras", "max_lora_rank", "lora_bytes_per_gpu"});
    t.right_align.insert(t.right_align.end(), 3, false);
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& l = rows[i].lora;
      t.rows[i].insert(t.rows[i].end(), {l ? std::to_string(l->memory.slots) : "", l ? std::to_string(l->memory.rank) : "",
                                         std::to_string(rows[i].plan.memory.lora_bytes)});
    }
  }
  if (any_ep_dp(rows)) insert_ep_dp(t, rows);
  if (any_dcp(rows)) insert_dcp(t, rows);
  return t;
}

std::vector<std::string> plan_warnings(const std::vector<PlanRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) {
    const Plan& p = r.plan;
    const std::string which = fmt::format("{} on {}, TP {}, context {}, batch {}, KV {}", r.model, r.gpu, r.options.tp,
                                          count(p.context_tokens), count(p.batch), to_string(p.kv_dtype)) +
                              (kv_quant_label(r) == "-" ? "" : " " + kv_quant_label(r));
    if (!r.what_if.empty()) out.push_back("what-if (" + which + "): " + r.what_if);
    if (p.shared_prefix)
      out.push_back(fmt::format("shared prefix ({}): {} tokens held once ({} blocks); at most {} requests of {} tokens fit "
                                "({} without sharing)",
                                which, count(p.shared_prefix->prefix_tokens), count(p.shared_prefix->shared_blocks),
                                count(p.shared_prefix->max_concurrent_requests), count(p.context_tokens),
                                count(p.capacity.max_concurrent_requests)));
    if (!p.fits && p.capacity.max_concurrent_requests > 0)
      out.push_back(fmt::format("no fit ({}): at most {} requests of {} tokens fit (limited by {}); the decode step is "
                                "what batch {} would take if it did",
                                which, count(p.capacity.max_concurrent_requests), count(p.context_tokens),
                                p.capacity.limited_by, count(p.batch)));
  }
  return out;
}

std::string plan_detail(const PlanRow& r) {
  const Plan& p = r.plan;
  const MemoryBudget& m = p.memory;
  std::string s;
  const ServingOptions& o = r.options;
  const std::string ep_dp = o.ep > 1 || o.dp > 1 ? fmt::format(", EP {}, DP {}: {} GPUs", o.ep, o.dp, o.tp * o.dp * o.pp) : "";
  s += fmt::format("\n{} on {} (TP {}, PP {}{}), {} tokens of context, batch {}\n", r.model, r.gpu, o.tp, o.pp, ep_dp,
                   count(p.context_tokens), p.batch);
  s += fmt::format("  parameters           {} ({:.2f} billion)\n", count(p.params), static_cast<double>(p.params) / 1e9);
  s += "Memory per GPU (GB = 1e9 B, GiB = 2^30 B)\n";
  const auto line = [&](const char* what, int64_t b) { s += fmt::format("  {:<20} {:>12}  {:>12}\n", what, gb(b), gib(b)); };
  line("GPU memory", m.gpu_bytes);
  line("usable", m.usable_bytes);
  line("weights", m.weights_bytes);
  if (m.tower_bytes > 0) line("vision tower", m.tower_bytes);
  if (m.lora_bytes > 0) line("LoRA slots", m.lora_bytes);
  line("activations", m.activation_bytes);
  line("runtime reserve", m.reserve_bytes);
  line("KV pool", m.kv_budget_bytes);
  if (!m.note.empty()) s += "  note: " + m.note + "\n";
  s += fmt::format("KV cache: {} per token (whole model), {} per token per GPU, {} per request\n",
                   bytes_binary(p.kv_bytes_per_token), bytes_binary(p.kv_bytes_per_token_per_gpu),
                   gb(p.kv_bytes_per_request));
  if (p.state_bytes_per_request > 0)
    s += fmt::format("Mamba / linear-attention state: {} per request (whole model), held beside the KV cache\n",
                     bytes_binary(p.state_bytes_per_request));
  s += fmt::format("Capacity: {} blocks of {} tokens = {} tokens; {} requests of {} tokens ({})\n",
                   count(p.capacity.num_blocks), kv_block_tokens(r.options), count(p.capacity.max_kv_tokens),
                   count(p.capacity.max_concurrent_requests), count(p.context_tokens), p.capacity.limited_by);
  if (o.dp > 1)
    s += fmt::format("  blocks per GPU; tokens and requests for the replica: {} data-parallel attention ranks, each "
                     "holding its own requests' KV\n",
                     o.dp);
  s += paging_text(p);
  s += host_tier_text(p, o);
  s += dcp_text(p, o);
  s += "FLOPs (2 per multiply-add)      prefill      decode step   generate (cache)  generate (naive)\n";
  const auto frow = [&](const char* what, double FlopBreakdown::*f) {
    s += fmt::format("  {:<26} {:>12}  {:>12}  {:>16}  {:>16}\n", what, flops(p.prefill.*f), flops(p.decode_step.*f),
                     flops(p.generate_cached.*f), flops(p.generate_naive.*f));
  };
  frow("QKV projections", &FlopBreakdown::qkv);
  frow("attention scores", &FlopBreakdown::attn_scores);
  frow("attention values", &FlopBreakdown::attn_values);
  frow("output projection", &FlopBreakdown::out_proj);
  frow("MLP / experts", &FlopBreakdown::mlp);
  frow("LM head", &FlopBreakdown::lm_head);
  s += fmt::format("  {:<26} {:>12}  {:>12}  {:>16}  {:>16}\n", "total", flops(p.prefill.total()),
                   flops(p.decode_step.total()), flops(p.generate_cached.total()), flops(p.generate_naive.total()));
  s += fmt::format("  naive / cached generation: {:.1f}×\n", p.generate_naive.total() / p.generate_cached.total());
  s += fmt::format(
      "  the seed's convention (QKV projections only, d×d, 1 FLOP per multiply-add): {} for naive generation\n",
      flops(p.seed_naive_projection_flops));
  const auto step = [&](const char* what, const StepTime& t) {
    s += fmt::format("  {:<12} {:>10}  (compute {}, memory {}, communication {}, overheads {}{}; {}-bound)\n", what,
                     seconds(t.time_s), seconds(t.compute_s), seconds(t.memory_s), seconds(t.communication_s),
                     seconds(t.overhead_s), t.lora_s > 0 ? ", LoRA kernels " + seconds(t.lora_s) : "", to_string(t.bound));
  };
  s += "Roofline latency";
  s += " (calibration: " + calibration_label(r.options.calibration, r.gpu, p.bandwidth_transfer, p.gemm_transfer) + ")\n";
  step("prefill", p.prefill_time);
  step("decode step", p.decode_time);
  if (!p.scale_out_note.empty()) s += "  note: " + p.scale_out_note + "\n";
  if (r.spec) s += spec_text(*r.spec);
  if (r.lora) {
    const LoraPlan& l = *r.lora;
    std::string modules;
    for (const LoraModule& x : l.memory.modules) modules += (modules.empty() ? "" : ", ") + x.name;
    const auto plural = [](int64_t n) { return n == 1 ? "" : "s"; };
    s += fmt::format("LoRA adapters: {} slot{} of rank {} ({}) on {}; {} per slot, {} ({}) per GPU; {} adapter{} cached in host memory\n",
                     l.memory.slots, plural(l.memory.slots), l.memory.rank, to_string(l.memory.dtype), modules,
                     bytes_binary(l.memory.slot_bytes_per_gpu), gb(l.memory.bytes_per_gpu), gib(l.memory.bytes_per_gpu),
                     l.memory.cpu_slots, plural(l.memory.cpu_slots));
    s += fmt::format("  KV cost: {} tokens ({} request{} of {} tokens) of the {} the pool holds without LoRA\n",
                     count(l.kv_tokens_lost), count(l.requests_lost), plural(l.requests_lost), count(p.context_tokens),
                     count(l.kv_tokens_without));
    s += fmt::format("  LoRA kernels: {} of the prefill, {} of the decode step ({} distinct adapter{} in the decode batch of {})\n",
                     seconds(l.prefill_lora_s), seconds(l.decode_lora_s), l.decode_adapters,
                     l.decode_adapters == 1 ? "" : "s", p.batch);
  }
  return s;
}

namespace {
std::string indent_lines(std::string s) {
  for (size_t at = s.find('\n'); at != std::string::npos; at = s.find('\n', at + 3)) s.replace(at, 1, "\n  ");
  return s;
}
}  // namespace

std::string plan_text(const std::vector<PlanRow>& rows) {
  std::string text = render(plan_table(rows, true), TextFormat::table);
  if (rows.size() == 1) text += plan_detail(rows.front());
  text += std::string(kSizeUnitsLegend) + "; memory per GPU; KV/token and KV/request for the whole model.\n";
  for (const auto& r : rows)
    if (!r.engine_log.empty())
      text += r.engine_name + " would log (" + r.model + " on " + r.gpu + ", TP " + std::to_string(r.options.tp) +
              (r.options.dp > 1 ? ", DP " + std::to_string(r.options.dp) + ", per rank" : "") + "):\n  " +
              indent_lines(r.engine_log) + "\n";
  for (const auto& w : plan_warnings(rows)) text += w + "\n";
  // Each note once, naming the rows it concerns: rows often share their engine's note, and
  // a row's own (weights beyond memory) must not hide behind another's.
  struct Note {
    std::string text;
    std::vector<std::string> places;    //!< "model on gpu", first-seen order
    std::vector<std::vector<int64_t>> tps;  //!< the TP sizes of each place
    size_t rows = 0;
  };
  std::vector<Note> notes;
  for (const auto& r : rows) {
    if (r.plan.memory.note.empty()) continue;
    auto n = std::find_if(notes.begin(), notes.end(), [&](const Note& x) { return x.text == r.plan.memory.note; });
    if (n == notes.end()) n = notes.insert(notes.end(), Note{r.plan.memory.note, {}, {}, 0});
    ++n->rows;
    const std::string place = r.model + " on " + r.gpu;
    auto at = std::find(n->places.begin(), n->places.end(), place);
    if (at == n->places.end()) {
      n->places.push_back(place);
      n->tps.emplace_back();
      at = n->places.end() - 1;
    }
    auto& tps = n->tps[static_cast<size_t>(at - n->places.begin())];
    if (std::find(tps.begin(), tps.end(), r.options.tp) == tps.end()) tps.push_back(r.options.tp);
  }
  for (const auto& n : notes) {
    std::string where;
    if (rows.size() > 1 && n.rows == rows.size()) {
      where = "every row";
    } else {
      for (size_t i = 0; i < n.places.size(); ++i) {
        where += (i ? "; " : "") + n.places[i] + ", TP ";
        for (size_t j = 0; j < n.tps[i].size(); ++j) where += (j ? ", " : "") + std::to_string(n.tps[i][j]);
      }
    }
    text += "note (" + where + "): " + n.text + "\n";
  }
  return text;
}

}  // namespace kvplan::reports
