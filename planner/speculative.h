// kvplan planner: speculative decoding (docs/speculative.md). A step drafts k tokens per
// sequence (an EAGLE / EAGLE-3 head, the checkpoint's MTP layers, a smaller draft model,
// or n-gram lookup in the prompt), then the target verifies k + 1 tokens per sequence in
// one pass and keeps the accepted prefix plus one token of its own.
//  - memory: the draft's weights and its own KV per token, as the engine accounts them
//    (spec_memory, applied by memory_budget and capacity);
//  - time: draft passes + one verify pass (SpecTimeModel), expected tokens per step from
//    per-position acceptance rates (expected_tokens_per_step).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/names.h"
#include "planner/planner.h"
#include "planner/types.h"

namespace kvplan {

//! vLLM's --speculative-config methods (deepseek_mtp is its older name for mtp).
enum class SpecMethod { eagle, eagle3, mtp, ngram, draft_model };
inline constexpr NameTable<SpecMethod, 6> kSpecMethodNames{{{
    {"eagle", SpecMethod::eagle}, {"eagle3", SpecMethod::eagle3}, {"mtp", SpecMethod::mtp},
    {"ngram", SpecMethod::ngram}, {"draft_model", SpecMethod::draft_model}, {"deepseek_mtp", SpecMethod::mtp},
}}};
std::string_view to_string(SpecMethod m);

struct SpecDecode {
  SpecMethod method = SpecMethod::eagle3;
  int64_t num_speculative_tokens = 1;  //!< k: draft tokens per sequence per step
  //! P(draft token i accepted | tokens 1..i-1 accepted), i = 1..k; one value = every position.
  std::vector<double> acceptance_rates;
  //! Mean tokens a step yields per sequence, the target's own token included (vLLM's
  //! "Mean acceptance length", the EAGLE papers' tau); 0 = from acceptance_rates.
  double acceptance_length = 0;
  //! draft_model: the draft; eagle / eagle3: the head's own config (its layers).
  std::optional<ModelConfig> draft;
  std::string draft_name;  //!< as given ("model" / --speculative-draft-model-path)
};

//! Throws InputError (key `--speculative-config` or the acceptance flag) when the
//! speculation cannot run on `target` with `o` as given.
void validate_spec(const ModelConfig& target, const ServingOptions& o, const std::string& where);
//! The acceptance default kvplan ships for `method` on `target` with k draft tokens, with
//! its source, or nullopt (the flag is then required). Only cited measurements.
std::optional<std::pair<std::vector<double>, std::string>> default_acceptance(const ModelConfig& target,
                                                                              SpecMethod method, int64_t k);
//! The k per-position rates in force on `target` (a mean length becomes the constant rate
//! that gives it; neither given: the shipped default) and where they come from. Throws
//! InputError (key --acceptance-rate) when neither is given and no default applies.
struct Acceptance {
  std::vector<double> rates;
  std::string source;
};
Acceptance resolve_acceptance(const SpecDecode& s, const ModelConfig& target);
//! 1 + a1 + a1 a2 + ... + a1...ak: the expected tokens one sequence gains per step.
double expected_tokens_per_step(const std::vector<double>& rates);
//! The constant rate a with 1 + a + ... + a^k = length (1 <= length <= k + 1).
double constant_rate_for_length(double length, int64_t k);

//! What the draft holds on one GPU.
struct SpecMemory {
  int64_t params = 0;                      //!< the draft's own parameters (shared embeddings excluded)
  int64_t weight_bytes_per_gpu = 0;
  int64_t kv_bytes_per_token_per_gpu = 0;  //!< the draft's own KV layers
  int64_t layers = 0;                      //!< its attention layers
  //! SGLang: extra MiB its default mem_fraction_static leaves out of the static pool for
  //! the draft and larger CUDA graphs; 0 elsewhere.
  int64_t engine_reserve_bytes = 0;
};
SpecMemory spec_memory(const ModelConfig& target, const ServingOptions& o);
//! Slots a decoding sequence holds beyond its context while a step runs: the 1 + k
//! verified positions and, for drafters that write KV (EAGLE, MTP, draft models), k
//! lookahead slots (vLLM's Scheduler num_lookahead_tokens).
int64_t spec_slots_per_step(const SpecDecode& s);

namespace detail {
//! memory_budget's hook: the draft's weights leave the pool (vLLM, ideal) or SGLang's
//! default mem_fraction_static shrinks (its weights and KV then live in the headroom).
void apply_spec_memory(const ModelConfig& target, const ServingOptions& o, MemoryBudget& b);
//! capacity's hook: the share of the KV budget the target's layers get when the draft's
//! KV layers live in the same paged pool (vLLM, ideal): budget x t / (t + d) bytes per token.
int64_t target_kv_budget(const ModelConfig& target, const ServingOptions& o, int64_t kv_budget_bytes);
//! SGLang's extra reserved MiB for speculative decoding (server_args.py).
double sglang_spec_reserved_mib(const ServingOptions& o);
}  // namespace detail

//! One speculative step of a batch, and the plain decode step it replaces.
struct SpecStep {
  int64_t batch = 0;
  double draft_s = 0, verify_s = 0, step_s = 0;
  double tokens_per_step = 0;       //!< per sequence (expected)
  double plain_step_s = 0;
  double tokens_per_s = 0, plain_tokens_per_s = 0;  //!< decode tokens per second, the batch
  double speedup() const { return plain_tokens_per_s > 0 ? tokens_per_s / plain_tokens_per_s : 0; }
};

//! One engine step with speculation as the simulator composes it: prefill chunks as
//! StepTimeModel::step takes them, beside `decoders` sequences that each verify k + 1
//! tokens. Keys and pairs are sums over the sequences (KvTraffic's units), once with the
//! target's layers and once with the draft's (whose windows may differ).
struct SpecStepLoad {
  int64_t prefill_tokens = 0;
  double prefill_pairs = 0;
  int64_t prefill_seqs = 0;
  double prefill_context = 0;
  int64_t decoders = 0;
  double decode_keys = 0;         //!< target: decode_keys(C) over the decoders (C: the context the first query attends)
  double verify_pairs = 0;        //!< target: prefill_pairs(C, k), the k draft positions' pairs
  double draft_prefill_pairs = 0, draft_decode_keys = 0, draft_verify_pairs = 0;  //!< the same, the draft's layers
  //! Sequences the draft proposes for in the passes after its first: the decoders and the
  //! prompts whose last chunk sampled their first token in this step.
  int64_t drafting = 0;
};
struct SpecStepTime {
  double verify_s = 0, draft_s = 0;
  double time_s() const { return verify_s + draft_s; }
};

class SpecTimeModel {
 public:
  //! o.spec must be set and valid (validate_spec).
  SpecTimeModel(const ModelConfig& target, const GpuSpec& g, const ServingOptions& o);
  //! `batch` sequences decoding at `context` tokens each.
  SpecStep at(int64_t batch, int64_t context) const;
  //! A step of the simulator; `lora` as StepTimeModel::step takes it (the target's pass).
  SpecStepTime step(const SpecStepLoad& l, const LoraStepLoad* lora = nullptr) const;
  double tokens_per_step() const { return tokens_per_step_; }
  int64_t draft_tokens() const { return k_; }
  const KvTraffic& kv_traffic() const { return target_.kv_traffic(); }
  //! The draft's layers (null for n-gram, which has none).
  const KvTraffic* draft_kv_traffic() const { return draft_ ? &draft_->kv_traffic() : nullptr; }

 private:
  StepTimeModel target_;
  std::optional<StepTimeModel> draft_;
  int64_t k_ = 1;
  double tokens_per_step_ = 1;
  double step_overhead_s_ = 0;  // the engine step's serial remainder, which a draft pass does not repeat
};

//! The speed-up by batch size: powers of two up to `max_batch`, and where it turns.
struct SpecSweep {
  std::vector<SpecStep> rows;
  //! The smallest batch at which speculation is slower than plain decoding (0: never up to max_batch).
  int64_t turns_at_batch = 0;
  int64_t max_batch = 0;
};
SpecSweep spec_sweep(const SpecTimeModel& t, int64_t context, int64_t max_batch);

//! What `plan` shows of the speculation of one row: its inputs in force, the draft's
//! memory, the step at the plan's batch and the sweep up to the batch the pool holds
//! (at most max_num_seqs).
struct SpecPlan {
  SpecDecode spec;
  Acceptance acceptance;
  double tokens_per_step = 0;
  int64_t slots_per_step = 0;  //!< spec_slots_per_step
  SpecMemory memory;
  SpecStep at_batch;
  SpecSweep sweep;
};
SpecPlan make_spec_plan(const ModelConfig& target, const GpuSpec& g, const ServingOptions& o, const Plan& p);

}  // namespace kvplan
