#include "reports/disagg_report.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>
#include <vector>

namespace kvplan::reports {

namespace {

std::string pool_name(const cluster::PoolSpec& p) {
  return fmt::format("{} x {} (TP {}, PP {})", p.instances, p.gpu.name, p.options.tp, p.options.pp);
}

nlohmann::json pool_json(const cluster::PoolSpec& spec, const cluster::PoolMetrics& m, int64_t block_bytes_per_gpu) {
  return {{"gpu", spec.gpu.name},
          {"tp", spec.options.tp},
          {"pp", spec.options.pp},
          {"instances", m.instances},
          {"gpus", m.gpus},
          {"requests", m.requests},
          {"rejected", m.rejected},
          {"preemptions", m.preemptions},
          {"busy_fraction", m.busy_fraction},
          {"steps", m.steps},
          {"batch", {{"mean", m.batch_mean}, {"max", m.batch_max}}},
          {"kv",
           {{"num_blocks", m.num_blocks},
            {"block_size", m.block_size},
            {"pool_bytes_per_gpu", m.num_blocks * block_bytes_per_gpu},
            {"peak_utilization", m.peak_kv_utilization},
            {"mean_utilization", m.mean_kv_utilization}}},
          {"wait_s", {{"p50", m.wait_s.p50}, {"p90", m.wait_s.p90}, {"p99", m.wait_s.p99}, {"mean", m.wait_s.mean}}}};
}

std::string pool_row(const cluster::PoolSpec& spec, const cluster::PoolMetrics& m, int64_t block_bytes_per_gpu) {
  return fmt::format("{}: {} GPU{}, {} blocks of {} tokens = {} per GPU; busy {}, KV use mean / peak {} / {}, "
                     "batch mean / max {} / {}, wait p50 / p99 {} / {}, {} rejected, {} preemptions",
                     pool_name(spec), m.gpus, m.gpus == 1 ? "" : "s", count(m.num_blocks), m.block_size, gib(m.num_blocks * block_bytes_per_gpu),
                     percent(m.busy_fraction), percent(m.mean_kv_utilization), percent(m.peak_kv_utilization), number(m.batch_mean),
                     m.batch_max, seconds(m.wait_s.p50), seconds(m.wait_s.p99), count(m.rejected),
                     count(m.preemptions));
}

}  // namespace

nlohmann::json disagg_json(const DisaggReport& r) {
  nlohmann::json j = sim_json(r.base);
  const cluster::DisaggResult& d = r.result;
  j["disagg"] = {
      {"prefill", pool_json(r.layout.prefill, d.prefill, r.prefill_kv_block_bytes_per_gpu)},
      {"decode", pool_json(r.layout.decode, d.decode, r.base.kv_block_bytes_per_gpu)},
      {"link",
       {{"kind", std::string(cluster::to_string(d.link.kind))},
        {"same_node", d.link.same_node},
        {"bytes_per_s", d.link.bytes_per_s},
        {"latency_s", d.link.latency_s},
        {"why", d.link.why}}},
      {"transfer",
       {{"count", d.transfers},
        {"bytes_mean", d.transfer_bytes_mean},
        {"time_s", {{"p50", d.transfer_s.p50}, {"p90", d.transfer_s.p90}, {"p99", d.transfer_s.p99}, {"mean", d.transfer_s.mean}}}}},
      {"ttft_convention",
       "arrival to the first token the decode instance streams: prefill queue + prefill + KV transfer + decode "
       "admission + its first step"}};
  return j;
}

Table disagg_csv_record(const DisaggReport& r) { return json_csv_record(disagg_json(r)); }

std::string disagg_text(const DisaggReport& r, TextFormat f) {
  if (f == TextFormat::csv) return render(disagg_csv_record(r), f);
  const cluster::DisaggResult& d = r.result;
  std::vector<std::pair<std::string, std::string>> rows;
  for (auto& [k, v] : sim_summary(r.base)) {
    if (k == "model / GPU") {
      rows.emplace_back("model", r.base.model);
      rows.emplace_back("layout", fmt::format("disaggregated {}P{}D: prefill {}, decode {}", r.layout.prefill.instances,
                                              r.layout.decode.instances, pool_name(r.layout.prefill),
                                              pool_name(r.layout.decode)));
      continue;
    }
    if (k == "KV pool") {
      rows.emplace_back("prefill pool", pool_row(r.layout.prefill, d.prefill, r.prefill_kv_block_bytes_per_gpu));
      rows.emplace_back("decode pool", pool_row(r.layout.decode, d.decode, r.base.kv_block_bytes_per_gpu));
      rows.emplace_back("KV link", fmt::format("{} ({}), {} GB/s, {} latency per transfer", cluster::to_string(d.link.kind),
                                               d.link.why, number(to_gb(d.link.bytes_per_s)), seconds(d.link.latency_s)));
      rows.emplace_back("KV transfer",
                        d.transfers == 0 ? std::string("none")
                                         : fmt::format("{} transfers, {} mean; time p50 / p99 / mean {} / {} / {}",
                                                       count(d.transfers), bytes_binary(std::llround(d.transfer_bytes_mean)),
                                                       seconds(d.transfer_s.p50), seconds(d.transfer_s.p99),
                                                       seconds(d.transfer_s.mean)));
      continue;
    }
    if (k == "queueing p50 / p99 / mean") k = "prefill queue p50 / p99 / mean";
    if (k == "batch mean / max" || k == "KV use mean / peak") continue;  // per pool above
    rows.emplace_back(std::move(k), std::move(v));
  }
  Table t;
  t.header = {"quantity", "value"};
  t.right_align = {false, false};
  for (auto& [k, v] : rows) t.rows.push_back({k, v});
  if (f != TextFormat::table) return render(t, f);
  return "kvplan simulate --disagg\n" + render(t, TextFormat::table) +
         "TTFT: arrival to the first token the decode instance streams (prefill, KV transfer, decode admission and its "
         "first step); TPOT: time per output token after the first; GiB = 2^30 bytes.\n";
}

}  // namespace kvplan::reports
