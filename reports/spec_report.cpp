#include "reports/spec_report.h"

#include <fmt/format.h>

#include <string>

#include "reports/table.h"

namespace kvplan::reports {

namespace {
std::string rates_text(const std::vector<double>& rates) {
  std::string out;
  for (const double a : rates) out += (out.empty() ? "" : ", ") + fmt::format("{:.3g}", a);
  return out;
}
}  // namespace

std::string paging_text(const Plan& p) {
  if (p.max_model_len <= 0 || p.capacity.max_concurrent_requests <= 0) return {};
  const int64_t paged = p.capacity.max_concurrent_requests, contiguous = p.contiguous_max_requests;
  return fmt::format(
      "What paging bought: {} requests of {} tokens in paged blocks; {} if each reserved max_model_len ({} tokens) "
      "contiguously, as engines allocated before PagedAttention{}\n",
      count(paged), count(p.context_tokens), count(contiguous), count(p.max_model_len),
      contiguous > 0 ? fmt::format(" ({:.1f}× fewer)", static_cast<double>(paged) / static_cast<double>(contiguous))
                     : " (not one fits)");
}

nlohmann::json paging_json(const Plan& p) {
  return {{"max_model_len_tokens", p.max_model_len},
          {"paged_max_requests", p.capacity.max_concurrent_requests},
          {"contiguous_max_requests", p.contiguous_max_requests}};
}

std::string spec_text(const SpecPlan& s) {
  const SpecDecode& d = s.spec;
  const char* plural = d.num_speculative_tokens == 1 ? "" : "s";
  std::string out = fmt::format("Speculative decoding: {}, {} draft token{} per step{}\n", to_string(d.method),
                                d.num_speculative_tokens, plural, d.draft ? ", draft " + d.draft->name : "");
  out += fmt::format("  acceptance per position {} ({}); expected {:.3f} tokens per sequence per step\n",
                     rates_text(s.acceptance.rates), s.acceptance.source, s.tokens_per_step);
  const SpecMemory& m = s.memory;
  if (m.weight_bytes_per_gpu > 0 || m.engine_reserve_bytes > 0)
    out += fmt::format("  draft: {} parameters, {} of weights per GPU, KV of {} layer(s) at {} per token per GPU{}\n",
                       count(m.params), gib(m.weight_bytes_per_gpu), m.layers,
                       bytes_binary(m.kv_bytes_per_token_per_gpu),
                       m.engine_reserve_bytes > 0
                           ? fmt::format(" (SGLang: in the {} its default mem_fraction_static leaves out)",
                                         gib(m.engine_reserve_bytes))
                           : "");
  out += fmt::format("  each decoding sequence holds {} slots beyond its context while a step runs\n",
                     s.slots_per_step);
  out += "  batch     plain step   spec step (draft + verify)        tokens/s plain   tokens/s spec   speed-up\n";
  for (const SpecStep& r : s.sweep.rows)
    out += fmt::format("  {:>5}  {:>12}  {:>10} ({:>9} + {:>9})  {:>15}  {:>14}  {:>8.2f}×\n", count(r.batch),
                       seconds(r.plain_step_s), seconds(r.step_s), seconds(r.draft_s), seconds(r.verify_s),
                       number(r.plain_tokens_per_s), number(r.tokens_per_s), r.speedup());
  out += s.sweep.turns_at_batch > 0
             ? fmt::format("  speculation is slower than plain decoding from batch {} on\n", count(s.sweep.turns_at_batch))
             : fmt::format("  speculation is faster at every batch up to {} (the most this pool holds)\n",
                           count(s.sweep.max_batch));
  return out;
}

nlohmann::json spec_json(const SpecPlan& s) {
  const auto step = [](const SpecStep& r) {
    return nlohmann::json{{"batch", r.batch},
                          {"draft_s", r.draft_s},
                          {"verify_s", r.verify_s},
                          {"step_s", r.step_s},
                          {"plain_step_s", r.plain_step_s},
                          {"tokens_per_s", r.tokens_per_s},
                          {"plain_tokens_per_s", r.plain_tokens_per_s},
                          {"speedup", r.speedup()}};
  };
  nlohmann::json sweep = nlohmann::json::array();
  for (const SpecStep& r : s.sweep.rows) sweep.push_back(step(r));
  return {{"method", std::string(to_string(s.spec.method))},
          {"num_speculative_tokens", s.spec.num_speculative_tokens},
          {"draft", s.spec.draft ? nlohmann::json(s.spec.draft->name) : nlohmann::json(nullptr)},
          {"acceptance_rates", s.acceptance.rates},
          {"acceptance_source", s.acceptance.source},
          {"tokens_per_step", s.tokens_per_step},
          {"slots_per_step_tokens", s.slots_per_step},
          {"draft_params", s.memory.params},
          {"draft_weight_bytes_per_gpu", s.memory.weight_bytes_per_gpu},
          {"draft_kv_bytes_per_token_per_gpu", s.memory.kv_bytes_per_token_per_gpu},
          {"draft_layers", s.memory.layers},
          {"engine_reserve_bytes", s.memory.engine_reserve_bytes},
          {"at_batch", step(s.at_batch)},
          {"by_batch", sweep},
          {"turns_at_batch", s.sweep.turns_at_batch > 0 ? nlohmann::json(s.sweep.turns_at_batch) : nlohmann::json(nullptr)}};
}

}  // namespace kvplan::reports
