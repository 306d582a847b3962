// Shared pieces of the size reports (size_common.h).
#include "planner/speculative.h"
#include "reports/size_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reports/table.h"

namespace kvplan::reports::size_detail {

std::string weight_label(const size::Deployment& o) {
  const WeightQuant q = o.candidate.options.quantization;
  if (q == WeightQuant::awq) return "int4 awq";
  if (q == WeightQuant::gptq) return "int4 gptq";
  // What the plan loads: without --quantization a quantized checkpoint's own format.
  if (o.plan_valid) return o.plan.weight_format;
  if (q != WeightQuant::none) return std::string(to_string(q));
  return o.candidate.options.dtype ? std::string(to_string(*o.candidate.options.dtype)) : "auto";
}

std::string kv_dtype_label(const size::Deployment& o) {
  if (o.plan_valid) return std::string(to_string(o.plan.kv_dtype));
  return o.candidate.options.kv_cache_dtype ? std::string(to_string(*o.candidate.options.kv_cache_dtype)) : "auto";
}

std::string kv_label(const size::Deployment& o) {
  const std::string d = kv_dtype_label(o);
  const bool quantized = o.plan_valid ? dtype_bits(o.plan.kv_dtype) < 8 : false;
  return quantized && o.candidate.options.kv_quant != KvQuant::raw
             ? d + " " + std::string(to_string(o.candidate.options.kv_quant))
             : d;
}

//! "continuous, 256 seqs" or "chunked, 128 seqs, 4096 tok": the engine limits searched.
std::string engine_label(const size::Deployment& o) {
  const auto& so = o.candidate.options;
  std::string out = fmt::format("{}, {} seqs", sim::to_string(o.candidate.scheduler), so.max_num_seqs);
  if (so.max_num_batched_tokens) out += fmt::format(", {} tok", *so.max_num_batched_tokens);
  if (so.lora) out += fmt::format(", {} LoRA", so.lora->max_loras);
  if (so.spec) out += fmt::format(", {} k{}", to_string(so.spec->method), so.spec->num_speculative_tokens);
  if (so.kv_offloading_bytes > 0) out += fmt::format(", host KV {:g} GiB", to_gib(static_cast<double>(so.kv_offloading_bytes)));
  if (so.hicache)
    out += so.hicache->size_bytes_per_gpu > 0
               ? fmt::format(", HiCache {:g} GB", to_gb(static_cast<double>(so.hicache->size_bytes_per_gpu)))
               : fmt::format(", HiCache x{:g}", so.hicache->ratio);
  return out;
}

std::string binds_label(const size::Deployment& o) {
  const std::string b(size::to_string(o.eval.binding));
  return o.eval.binding == size::Binding::engine_limit && !o.candidate.options.max_num_seqs_given ? b + " (default)" : b;
}

std::string money(std::optional<double> v) { return v ? fmt::format("${:.2f}", *v) : "n/a"; }

std::string money_small(std::optional<double> v) {
  if (!v) return "n/a";
  if (*v >= 0.1 || *v == 0) return fmt::format("${:.2f}", *v);
  // Three significant digits below ten cents.
  const int decimals = 2 - static_cast<int>(std::floor(std::log10(*v)));
  return fmt::format("${:.{}f}", *v, decimals);
}

std::string reason_kind(const std::string& reason) {
  const auto colon = reason.find(':');
  return colon == std::string::npos ? reason : reason.substr(0, colon);
}

std::vector<std::string> assumptions(const size::SizeResult& r) {
  std::vector<std::string> a;
  a.push_back("Units: " + std::string(kSizeUnitsLegend) + "; memory figures are per GPU unless stated.");
  a.push_back(r.calibrated
                  ? "FLOPs count 2 per multiply-add; step times add each layer's GEMMs, attention, elementwise "
                    "kernels and tensor-parallel all-reduces at the calibration's fitted efficiencies, plus the "
                    "engine's CPU time per step and per request (docs/calibration.md)."
                  : "FLOPs count 2 per multiply-add; step times are rooflines: max(FLOPs / (peak x efficiency), "
                    "bytes / (bandwidth x efficiency)) plus tensor-parallel all-reduces.");
  a.push_back(fmt::format("Engine memory accounting: {} (usable = GPU memory x gpu_memory_utilization; the KV pool "
                          "is what is left after weights, activations and the runtime reserve).",
                          r.engine.empty() ? "ideal" : r.engine));
  if (r.calibrated)
    a.push_back(fmt::format("Efficiencies: measured calibration from {}.", r.calibration_device.empty() ? "a device" : r.calibration_device));
  else
    a.push_back("Efficiencies: documented defaults (no --calibration): 80 % of datasheet bandwidth, 70 % of peak "
                "FLOP/s in prefill, 50 % in decode.");
  for (const std::string& note : r.accuracy) a.push_back("Measured error of the time model: " + note);
  if (!r.unmeasured_gpus.empty()) {
    std::string gpus;
    for (const std::string& g : r.unmeasured_gpus) gpus += (gpus.empty() ? "" : ", ") + g;
    a.push_back("Unmeasured: no measured error of the time model covers " + gpus + "; the latency and max-rate figures on " +
                (r.unmeasured_gpus.size() == 1 ? "it" : "them") + " are the model's alone.");
  }
  // Options whose replica spans several scale-up domains: which collectives pay the NIC
  // (planner scale_out_note, as `plan` prints it), once per distinct layout.
  std::vector<std::string> scale_out;
  for (const size::Deployment& o : r.options)
    if (!o.pruned && o.plan_valid && !o.plan.scale_out_note.empty() &&
        std::find(scale_out.begin(), scale_out.end(), o.plan.scale_out_note) == scale_out.end())
      scale_out.push_back(o.plan.scale_out_note);
  for (const std::string& note : scale_out) a.push_back("Scale-out: " + note + ".");
  if (r.simulated) {
    a.push_back(fmt::format("Max rate per replica: the highest Poisson-scaled arrival rate whose simulated p99 TTFT and p99 "
                            "TPOT meet the SLO, found by doubling/halving then bisection to 2 %, {} requests per probe, "
                            "seed {} (the same requests for every option).",
                            r.requests_per_probe, r.seed));
    a.push_back("A rejected request (prompt at max-model-len, or longer than the KV pool) is a failed request: it counts "
                "as infinitely late in the p99 verdict, so more than 1 % rejected misses the SLO. A probe needs at least "
                "1,000 requests, so that 10 lie above the p99 it is judged on.");
    a.push_back("The recommended options' max rate is found again with other seeds; its range is the noise of the "
                "estimate, and options whose rates differ by less are not different.");
  } else {
    a.push_back("Max rate per replica (--evaluator planner, nothing simulated): the planner's closed form on mean "
                "requests: the replica's time shared between chunked prefills and decode steps, the decode share "
                "held to the p99 TPOT target, the requests in flight held to what the KV pool and max-num-seqs allow, "
                "times 0.8 headroom. It sees no queueing or TPOT tail, so it can be several times above what the "
                "simulator finds (docs/long-context.md); use the default evaluator before buying.");
  }
  a.push_back("Replicas = ceil(workload rate / max rate per replica); cost per hour = replicas x TP x PP x GPU price; "
              "cost per million output (input) tokens = cost per hour / (rate x mean output (prompt) tokens x 3600) "
              "x 1e6, each the whole deployment's cost; cost per request = cost per hour / (rate x 3600). N+1 = one "
              "replica more than the load needs, so the SLO holds with one down.");
  a.push_back(r.what_if ? "What-ifs searched (--what-if): formats no engine in kvplan's support table runs are included "
                          "and marked; docs/engines.md lists what each engine runs."
                        : "Only formats an engine runs are searched (docs/engines.md lists them); --what-if adds "
                          "kvplan's own what-ifs (int4/int2 KV caches, KIVI, KVQuant).");
  a.push_back(fmt::format("Pruning uses the workload's p99 context ({} tokens) and p99 prompt ({} tokens), sampled from "
                          "{} generated requests.",
                          r.shape.context_p99_tokens, r.shape.prompt_p99_tokens, r.shape.samples));
  a.push_back("GPU prices are indicative list prices from the GPU catalog (configs/gpus), not quotes.");
  if (std::any_of(r.options.begin(), r.options.end(), [](const size::Deployment& o) {
        return o.candidate.options.kv_offloading_bytes > 0 || o.candidate.options.hicache.has_value();
      }))
    a.push_back("Host KV tier: its host memory comes out of the server's own DRAM (host_memory_bytes in the server "
                "file; with --buy, DRAM beyond it is bought at dram_usd_per_gib from --prices, up to host_memory_max_bytes, and "
                "an option whose tier is beyond a GPU's share of what can be had cannot be bought); its loads run over "
                "a 25 GB/s host link per GPU, PCIe 4.0 x16 as achieved (docs/kv-tiers.md).");
  if (std::any_of(r.options.begin(), r.options.end(),
                  [](const size::Deployment& o) { return o.candidate.options.kv_disk_bytes > 0; }))
    a.push_back("Disk KV tier: its reads run at 6.9 GB/s per GPU (one PCIe Gen4 datacenter SSD per GPU) before the "
                "host link; with --buy its drives are priced at nvme_usd_per_tb from --prices, else not priced "
                "(docs/kv-tiers.md \"The disk tier\").");
  return a;
}

std::string evaluated_how(const size::SizeResult& r) {
  return r.simulated ? "simulated" : "estimated by the planner (not simulated)";
}

std::string validation_status(const size::SizeResult& r) {
  return r.calibrated ? "Predictions of kvplan's planner and simulator, with efficiencies measured on " +
                            (r.calibration_device.empty() ? std::string("a device") : r.calibration_device) +
                            "; other GPUs are extrapolated from the datasheets."
                      : "Predictions of kvplan's planner and simulator from datasheet figures and default efficiencies; "
                        "not validated against measurements of these deployments. Run `kvplan validate` on the "
                        "hardware and pass --calibration to tighten them.";
}

std::string costs(const size::Deployment& o) {
  return fmt::format("{}/h: {} per million output tokens, {} per million input tokens, {} per request",
                     money(o.cost_per_hour_usd), money_small(o.cost_per_million_output_tokens_usd),
                     money_small(o.cost_per_million_input_tokens_usd), money_small(o.cost_per_request_usd));
}

std::string max_rate(const size::Deployment& o, const size::Recommendation& rec) {
  std::string s = fmt::format("max {:.2f} requests/s per replica", o.eval.max_rate_per_s);
  if (rec.spread.seeds > 1)
    s += fmt::format(" ({:.2f}-{:.2f} over {} seeds; differences within it are noise)", rec.spread.min_per_s,
                     rec.spread.max_per_s, rec.spread.seeds);
  return s;
}

std::string binding(const size::Deployment& o, const size::Recommendation& rec) {
  if (rec.binds_on_default_max_num_seqs)
    return fmt::format("bound by max-num-seqs ({}: the engine default, not set by you; try --max-num-seqs)",
                       o.candidate.options.max_num_seqs);
  return "bound by " + std::string(size::to_string(o.eval.binding));
}

namespace {
std::string failures_sentence(const size::FailurePlan& f) {
  const int64_t fleet = f.replicas_needed + f.spares;
  std::string s = fmt::format(
      "Failures ({:g} % of the time asked): a replica of {} GPU{} is down {:.3g} % of the time ({:.3g} failures per "
      "GPU-year, {:g} h to repair); {} + {} replica{}{} keep {} up all but {:.2g} % of the time ({:.3g} h a year)",
      100 * f.asked.availability, f.gpus_per_replica, f.gpus_per_replica == 1 ? "" : "s", 100 * f.replica_unavailability,
      f.asked.gpu_failures_per_year, f.asked.repair_hours, f.replicas_needed, f.spares, fleet == 1 ? "" : "s",
      f.cost_per_hour_usd ? " (" + money(*f.cost_per_hour_usd) + "/h)" : std::string(), f.replicas_needed,
      100 * (1 - f.availability), (1 - f.availability) * size::kHoursPerYear);
  if (fleet == 1) {
    s += "; with it down nothing serves.";
  } else if (f.one_down) {
    s += fmt::format("; with one down each other replica carries {:.2f} requests/s: p99 TTFT {}, p99 TPOT {}, {} the SLO.",
                     f.one_down_share_per_s, seconds(f.one_down->ttft_p99_s), seconds(f.one_down->tpot_p99_s),
                     f.one_down->meets_slo ? "meets" : "misses");
  } else {
    s += fmt::format("; with one down each other replica carries {:.2f} requests/s.", f.one_down_share_per_s);
  }
  return s;
}
}  // namespace

std::string headroom(const size::SizeResult& r, const size::Recommendation& rec) {
  const size::Deployment& o = r.options[rec.option];
  std::string s = fmt::format("Each replica carries {:.0f} % of its max rate ({:.0f} % headroom)", 100 * rec.utilization,
                              std::max(0.0, 100 * (1 - rec.utilization)));
  const int64_t n = o.replicas;
  if (n == 1)
    s += fmt::format("; one replica is a single point of failure: N+1 = {} replicas ({}/h) keep the SLO with one down",
                     rec.replicas_n_plus_one, money(rec.cost_per_hour_n_plus_one_usd));
  else
    s += fmt::format("; with one of the {} down the rest miss the SLO: N+1 = {} replicas ({}/h)", n,
                     rec.replicas_n_plus_one, money(rec.cost_per_hour_n_plus_one_usd));
  if (rec.replicas_at_min_rate > n)
    s += fmt::format("; at the lowest seed's rate it needs {} replicas", rec.replicas_at_min_rate);
  s += ".";
  if (rec.failures) s += " " + failures_sentence(*rec.failures);
  if (rec.confidence) {
    const size::SloConfidence& c = *rec.confidence;
    s += fmt::format(" Given the time model's measured error ({} held-out runs{}), it meets the SLO with probability "
                     "{:.0f} %",
                     c.runs, c.on_gpu ? " on " + o.gpu : " on other GPUs: none enough on " + o.gpu, 100 * c.probability);
    for (const size::SloConfidence::Level& l : c.levels)
      s += l.replicas > 0 ? fmt::format("; for {:.0f} %: {} replica{} ({:.2f} requests/s each{})", 100 * l.q, l.replicas,
                                        l.replicas == 1 ? "" : "s", l.max_rate_per_s,
                                        l.worst_run ? ", the worst run's error" : "")
                          : fmt::format("; for {:.0f} %: none meets it", 100 * l.q);
    s += ".";
  }
  return s;
}

std::string unmet_reason(const size::Unmet& u) {
  if (u.rejections_decide())
    return fmt::format("{} of {} simulated requests have prompts that reach its max_model_len and are rejected, more "
                       "than the 1 % a p99 SLO allows to fail",
                       count(u.rejected_max_model_len), count(u.requests));
  if (u.evaluated > 0) return fmt::format("all {} options evaluated miss the SLO at every rate tried", count(u.evaluated));
  return "every candidate was pruned before simulation";
}

std::string rejected_note(const size::Deployment& o) {
  if (o.eval.rejected_at_max == 0) return "";
  return fmt::format("{} of {} simulated requests were rejected ({} prompts reach max-model-len); they count as failed "
                     "requests in the SLO verdict.",
                     count(o.eval.rejected_at_max), count(o.eval.requests_at_max),
                     count(o.eval.rejected_max_model_len_at_max));
}

}  // namespace kvplan::reports::size_detail
