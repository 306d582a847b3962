// Speculative decoding: the draft's memory as each engine accounts it, and the time of a
// draft + verify step. Sources are cited where each rule is applied; docs/speculative.md
// collects them.
#include "planner/speculative.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "planner/checked.h"

namespace kvplan {

std::string_view to_string(SpecMethod m) { return kSpecMethodNames.name(m); }

namespace {

constexpr const char* kKey = "--speculative-config";

std::string str(int64_t v) { return std::to_string(v); }

//! The options a separately loaded draft (an EAGLE head, a draft model) runs with: the
//! target's TP, one pipeline stage, no expert or data parallelism (a dense draft), the
//! weights as its checkpoint stores them.
ServingOptions draft_options(const ServingOptions& o) {
  ServingOptions d = o;
  d.spec.reset();
  d.pp = 1;
  d.ep = 1;
  d.dp = 1;
  d.redundant_experts = 0;
  d.kv_heads.reset();
  d.quantization = WeightQuant::none;
  d.quantization_given = false;
  return d;
}

//! The MTP layers kept on the last pipeline stage (vLLM runs the drafter there): the
//! target's options on one stage.
ServingOptions mtp_options(const ServingOptions& o) {
  ServingOptions d = o;
  d.spec.reset();
  d.pp = 1;
  return d;
}

//! `c` with `layers` uniform layers (per-layer plans dropped: a head's layers are alike).
ModelConfig with_layers(ModelConfig c, int64_t layers) {
  c.num_layers = layers;
  const int64_t window = c.layer_window.empty() ? 0 : c.layer_window.front();
  c.layer_window.assign(static_cast<size_t>(layers), window);
  c.layer_mixer.clear();
  c.layer_ffn.clear();
  c.layer_intermediate.clear();
  c.layer_kv_shared.clear();
  c.num_nextn_predict_layers = 0;
  c.tower_params = 0;
  c.published_params.reset();
  return c;
}

//! DeepSeek-V3's MTP module as vLLM builds it (vllm/model_executor/models/deepseek_mtp.py
//! DeepSeekMultiTokenPredictorLayer): one decoder layer per num_nextn_predict_layers, of
//! the model's MoE kind (the checkpoint's layer 61 holds 256 routed experts).
ModelConfig mtp_head(const ModelConfig& target) {
  ModelConfig c = with_layers(target, target.num_nextn_predict_layers);
  c.first_dense_layers = 0;
  c.name = target.name + " MTP";
  return c;
}

//! The draft as its passes run it: the MTP layers, the head (EAGLE-3's LM head over its
//! draft vocabulary), or the draft model.
ModelConfig draft_runner(const ModelConfig& target, const SpecDecode& s) {
  if (s.method == SpecMethod::mtp) return mtp_head(target);
  ModelConfig c = *s.draft;
  if (s.method == SpecMethod::eagle3 && c.draft_vocab_size > 0) c.vocab_size = c.draft_vocab_size;
  return c;
}

ServingOptions runner_options(const SpecDecode& s, const ServingOptions& o) {
  return s.method == SpecMethod::mtp ? mtp_options(o) : draft_options(o);
}

//! Bytes and parameters of `layers` decoder layers of `c` on one GPU: the difference of
//! two whole-model counts, so embeddings and LM head cancel and each layer is counted as
//! weight_bytes_per_gpu counts it (quantization, TP split, replicated K/V heads).
std::pair<int64_t, int64_t> layer_bytes_params(const ModelConfig& c, const ServingOptions& o, int64_t layers) {
  const ModelConfig one = with_layers(c, layers), two = with_layers(c, 2 * layers);
  return {weight_bytes_per_gpu(two, o) - weight_bytes_per_gpu(one, o),
          count_params(two).total() - count_params(one).total()};
}

}  // namespace

std::optional<std::pair<std::vector<double>, std::string>> default_acceptance(const ModelConfig& target,
                                                                              SpecMethod method, int64_t k) {
  // DeepSeek-V3 technical report (arXiv 2412.19437) section 5.4.3: "the acceptance rate of
  // the second token prediction ranges between 85% and 90%" with its one MTP module; the
  // low end is shipped. It measures one draft token only.
  if (method == SpecMethod::mtp && target.model_type == "deepseek_v3" && k == 1)
    return std::make_pair(std::vector<double>{0.85},
                          std::string("DeepSeek-V3 technical report (arXiv 2412.19437) 5.4.3: second-token "
                                      "acceptance 85-90 %, the low end"));
  return std::nullopt;
}

Acceptance resolve_acceptance(const SpecDecode& s, const ModelConfig& target) {
  const auto k = static_cast<size_t>(s.num_speculative_tokens);
  if (s.acceptance_length > 0)
    return {std::vector<double>(k, constant_rate_for_length(s.acceptance_length, s.num_speculative_tokens)),
            "--acceptance-length"};
  if (s.acceptance_rates.size() == 1) return {std::vector<double>(k, s.acceptance_rates.front()), "--acceptance-rate"};
  if (!s.acceptance_rates.empty()) return {s.acceptance_rates, "--acceptance-rate"};
  if (auto d = default_acceptance(target, s.method, s.num_speculative_tokens)) return {d->first, d->second};
  throw InputError("command line", "--acceptance-rate",
                   "per-position acceptance rates or a mean --acceptance-length (kvplan ships a measured default "
                   "only for mtp on DeepSeek-V3 with 1 draft token; docs/speculative.md)",
                   std::string(to_string(s.method)) + " on " + target.name + " with " +
                       std::to_string(s.num_speculative_tokens) + " draft tokens");
}

double expected_tokens_per_step(const std::vector<double>& rates) {
  double all_accepted = 1, tokens = 1;  // the target's own token always comes out
  for (const double a : rates) {
    all_accepted *= a;
    tokens += all_accepted;
  }
  return tokens;
}

double constant_rate_for_length(double length, int64_t k) {
  // 1 + a + ... + a^k rises from 1 to k + 1 on [0, 1]: bisection to double precision.
  double lo = 0, hi = 1;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = (lo + hi) / 2;
    double sum = 1, power = 1;
    for (int64_t j = 0; j < k; ++j) sum += power *= mid;
    (sum < length ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

void validate_spec(const ModelConfig& target, const ServingOptions& o, const std::string& where) {
  if (!o.spec) return;
  const SpecDecode& s = *o.spec;
  const std::string method(to_string(s.method));
  if (o.engine == Engine::trtllm)
    throw InputError(where, kKey, "--engine vllm, sglang or ideal (TensorRT-LLM's speculative decoding is not modelled)",
                     "--engine trtllm");
  if (!o.kv_cache) throw InputError(where, kKey, "a KV cache (speculation verifies against it)", "--no-kv-cache");
  if (s.num_speculative_tokens < 1)
    throw InputError(where, kKey + std::string(" num_speculative_tokens"), "an integer >= 1",
                     str(s.num_speculative_tokens));
  const std::string k = str(s.num_speculative_tokens);
  if (!s.acceptance_rates.empty() && s.acceptance_length > 0)
    throw InputError(where, "--acceptance-length", "either --acceptance-rate or --acceptance-length, not both",
                     "both");
  if (s.acceptance_rates.empty() && !(s.acceptance_length > 0)) (void)resolve_acceptance(s, target);
  for (const double a : s.acceptance_rates)
    if (!(a >= 0 && a <= 1)) throw InputError(where, "--acceptance-rate", "rates in [0, 1]", std::to_string(a));
  if (s.acceptance_rates.size() > 1 && static_cast<int64_t>(s.acceptance_rates.size()) != s.num_speculative_tokens)
    throw InputError(where, "--acceptance-rate",
                     "one rate, or one per draft position (" + k + ", num_speculative_tokens)",
                     str(static_cast<int64_t>(s.acceptance_rates.size())) + " rates");
  if (s.acceptance_length > 0 && !(s.acceptance_length <= static_cast<double>(s.num_speculative_tokens + 1)))
    throw InputError(where, "--acceptance-length",
                     "a mean of 1 to num_speculative_tokens + 1 = " + str(s.num_speculative_tokens + 1) +
                         " tokens per step (the target's own token included)",
                     std::to_string(s.acceptance_length));
  switch (s.method) {
    case SpecMethod::mtp:
      if (target.num_nextn_predict_layers < 1)
        throw InputError(where, kKey + std::string(" method"),
                         "a model whose config has num_nextn_predict_layers >= 1 for mtp (" + target.name +
                             " ships no MTP layers)",
                         method);
      break;
    case SpecMethod::eagle:
    case SpecMethod::eagle3:
    case SpecMethod::draft_model:
      if (!s.draft)
        throw InputError(where, kKey + std::string(" model"),
                         "the draft's config (a catalog name or a config.json / YAML file) for " + method, "nothing");
      if (s.draft->is_moe() || s.draft->has_state_layers())
        throw InputError(where, kKey + std::string(" model"), "a dense attention draft (" + s.draft->name + ")",
                         s.draft_name);
      validate(*s.draft, draft_options(o), where + " (draft " + s.draft->name + ")");
      if (s.method == SpecMethod::draft_model && s.draft->vocab_size != target.vocab_size)
        throw InputError(where, kKey + std::string(" model"),
                         "a draft with the target's vocabulary (" + str(target.vocab_size) + " tokens)",
                         s.draft->name + ": " + str(s.draft->vocab_size));
      break;
    case SpecMethod::ngram: break;
  }
}

int64_t spec_slots_per_step(const SpecDecode& s) {
  // vLLM V1 Scheduler.__init__ (vllm/v1/core/sched/scheduler.py): num_lookahead_tokens =
  // num_speculative_tokens when use_eagle() (EAGLE, EAGLE-3, MTP) or a draft model; n-gram
  // drafts write no KV. allocate_slots reserves the 1 + k scheduled tokens plus them.
  const int64_t lookahead = s.method == SpecMethod::ngram ? 0 : s.num_speculative_tokens;
  return 1 + s.num_speculative_tokens + lookahead;
}

SpecMemory spec_memory(const ModelConfig& target, const ServingOptions& o) {
  SpecMemory r;
  if (!o.spec) return r;
  const SpecDecode& s = *o.spec;
  if (o.engine == Engine::sglang) r.engine_reserve_bytes = static_cast<int64_t>(detail::sglang_spec_reserved_mib(o)) << 20;
  if (s.method == SpecMethod::ngram) return r;  // prompt lookup on the CPU: nothing on the GPU
  const ServingOptions d = runner_options(s, o);
  const int64_t h = target.hidden_size;
  if (s.method == SpecMethod::draft_model) {
    r.params = count_params(*s.draft).total();
    r.weight_bytes_per_gpu = weight_bytes_per_gpu(*s.draft, d);
    r.kv_bytes_per_token_per_gpu = kv_bytes_per_token_per_gpu(*s.draft, d);
    r.layers = s.draft->attention_layers();
    return r;
  }
  const ModelConfig head = s.method == SpecMethod::mtp ? mtp_head(target) : *s.draft;
  const int64_t act = dtype_bits(d.activation_dtype(head)) / 8;
  auto [bytes, params] = layer_bytes_params(head, d, head.num_layers);
  // Embedding and LM head: vLLM's EagleProposer.load_model (vllm/v1/spec_decode/eagle.py at
  // 008603a) shares the target's for MTP and for EAGLE heads whose checkpoint has none
  // (EAGLE-1); EAGLE-3 heads bring an LM head over their draft vocabulary.
  int64_t replicated = 0, split = 0;  // extra parameters: whole on every GPU, split over TP
  if (s.method == SpecMethod::mtp) {
    // deepseek_mtp.py: eh_proj = nn.Linear(2h, h) (a plain, replicated, unquantized
    // Linear) and enorm, hnorm, shared_head.norm, per MTP layer.
    replicated = head.num_layers * (2 * h * h + 3 * h);
  } else if (s.method == SpecMethod::eagle) {
    // llama_eagle.py: fc = Linear(2h, h) fuses the token embedding with the target's hidden state.
    replicated = 2 * h * h;
  } else {
    // llama_eagle3.py: fc = ReplicatedLinear(3h, h) over three target layers' hidden states;
    // the first layer's q/k/v read [embedding, hidden] (2h inputs: h more per output row);
    // hidden_norm; an LM head of draft_vocab_size rows (ParallelLMHead, split over TP).
    const int64_t kv_width = 2 * head.num_kv_heads * head.head_dim;
    replicated = 3 * h * h + h;
    const int64_t vocab = head.draft_vocab_size > 0 ? head.draft_vocab_size : head.vocab_size;
    split = h * (head.q_dim() + kv_width) + vocab * h;
  }
  r.params = params + replicated + split;
  r.weight_bytes_per_gpu = bytes + replicated * act + detail::ceil_div(split, o.tp) * act;
  r.kv_bytes_per_token_per_gpu = kv_bytes_per_token_per_gpu(with_layers(head, head.num_layers), d);
  r.layers = head.num_layers;
  return r;
}

namespace detail {

double sglang_spec_reserved_mib(const ServingOptions& o) {
  // sgl-project/sglang python/sglang/srt/server_args.py, _handle_gpu_memory_settings:
  // "draft model and larger cuda graph buffers": reserved_mem += 6 * 1024 for STANDALONE
  // (a draft model), 2 * 1024 for the EAGLE family (EAGLE, EAGLE3, NEXTN), none for NGRAM.
  if (!o.spec) return 0;
  switch (o.spec->method) {
    case SpecMethod::draft_model: return 6 * 1024.0;
    case SpecMethod::ngram: return 0;
    default: return 2 * 1024.0;
  }
}

void apply_spec_memory(const ModelConfig& target, const ServingOptions& o, MemoryBudget& b) {
  // vLLM loads the drafter in GPUModelRunner.load_model before profiling, so its weights
  // are part of "model weights" and leave the KV budget. SGLang's draft worker loads its
  // weights and its own KV pool (as many tokens as the target's) in the headroom its
  // smaller default mem_fraction_static leaves (sglang_spec_reserved_mib).
  if (!o.spec || o.engine == Engine::sglang) return;
  const int64_t w = spec_memory(target, o).weight_bytes_per_gpu;
  b.weights_bytes = checked_add(b.weights_bytes, w, "weights");
  if (o.engine != Engine::ideal) b.kv_budget_bytes = std::max<int64_t>(0, b.kv_budget_bytes - w);
}

int64_t target_kv_budget(const ModelConfig& target, const ServingOptions& o, int64_t kv_budget_bytes) {
  // vLLM registers the drafter's attention layers with the KV cache manager like the
  // target's (EagleProposer.validate_same_kv_cache_group: one KV cache group): each block
  // of the pool holds every layer, the draft's included, so the target's tokens get the
  // share t / (t + d) of the bytes.
  if (!o.spec || o.engine == Engine::sglang || kv_budget_bytes <= 0) return kv_budget_bytes;
  const auto t = static_cast<double>(kv_bytes_per_token_per_gpu(target, o));
  const auto d = static_cast<double>(spec_memory(target, o).kv_bytes_per_token_per_gpu);
  if (!(t > 0) || !(d > 0)) return kv_budget_bytes;
  return static_cast<int64_t>(std::floor(static_cast<double>(kv_budget_bytes) * t / (t + d)));
}

}  // namespace detail

// ------------------------------------------------------------------------ time

namespace {
ServingOptions without_spec(ServingOptions o) {
  o.spec.reset();
  return o;
}
}  // namespace

SpecTimeModel::SpecTimeModel(const ModelConfig& target, const GpuSpec& g, const ServingOptions& o)
    : target_(target, g, without_spec(o)),
      k_(o.spec->num_speculative_tokens),
      tokens_per_step_(expected_tokens_per_step(resolve_acceptance(*o.spec, target).rates)),
      step_overhead_s_(o.calibration.step_overhead_s) {
  if (o.spec->method != SpecMethod::ngram)
    draft_.emplace(draft_runner(target, *o.spec), g, runner_options(*o.spec, o));
}

SpecStepTime SpecTimeModel::step(const SpecStepLoad& l, const LoraStepLoad* lora) const {
  SpecStepTime t;
  // The verify pass: one target forward over the prefill chunks and k + 1 token rows per
  // decoder, each sampled (k + 1 logit rows per decoder), reading each decoder's KV once
  // (the attention kernel takes a sequence's k + 1 queries together); the k draft
  // positions' extra query-key pairs are priced as chunk pairs. Their KV writes are not
  // counted (docs/speculative.md).
  const StepTime verify = target_.step(l.prefill_tokens, l.prefill_pairs + l.verify_pairs, l.decoders * (k_ + 1),
                                       l.decode_keys, l.prefill_seqs, l.prefill_context, lora);
  t.verify_s = verify.time_s;
  // n-gram proposals are a lookup in the prompt on the CPU (vLLM's NgramProposer): no
  // GPU pass. The others run as vLLM's EagleProposer.propose does: one pass over every
  // token the target just ran (the chunks' too: the draft keeps its own KV of the
  // prompt), then k - 1 passes of one token per drafting sequence, inside the same engine
  // step (the engine step's own terms, host work and step_overhead_s, are the target
  // pass's: a draft pass adds its GPU side less step_overhead_s, and under async
  // scheduling the host overlaps the step's GPU side, drafts included).
  if (!draft_ || (l.decoders == 0 && l.prefill_tokens == 0)) return t;
  const auto dec = static_cast<double>(l.decoders);
  const auto pass_s = [&](const StepTime& p) { return std::max(0.0, p.gpu_s - step_overhead_s_); };
  t.draft_s = pass_s(draft_->step(l.prefill_tokens, l.draft_prefill_pairs + l.draft_verify_pairs,
                                  l.decoders * (k_ + 1), l.draft_decode_keys, l.prefill_seqs, l.prefill_context));
  if (k_ > 1 && l.drafting > 0) {
    const auto drafting = static_cast<double>(l.drafting);
    // The later passes attend about the decoders' contexts: their keys, per sequence.
    const double keys = l.decoders > 0 ? l.draft_decode_keys / dec * drafting : 0;
    t.draft_s += static_cast<double>(k_ - 1) * pass_s(draft_->step(0, 0, l.drafting, keys));
  }
  t.verify_s = target_.compose(verify.gpu_s + t.draft_s, verify.host_s) - t.draft_s;
  return t;
}

SpecStep SpecTimeModel::at(int64_t batch, int64_t context) const {
  SpecStep s;
  s.batch = batch;
  const auto b = static_cast<double>(batch);
  SpecStepLoad l;
  l.decoders = batch;
  l.drafting = batch;
  const KvTraffic& kv = target_.kv_traffic();
  l.decode_keys = b * kv.decode_keys(context);
  l.verify_pairs = b * kv.prefill_pairs(context, k_);
  if (draft_) {
    const KvTraffic& dkv = draft_->kv_traffic();
    l.draft_decode_keys = b * dkv.decode_keys(context);
    l.draft_verify_pairs = b * dkv.prefill_pairs(context, k_);
  }
  const SpecStepTime t = step(l);
  s.verify_s = t.verify_s;
  s.draft_s = t.draft_s;
  s.step_s = t.time_s();
  s.tokens_per_step = tokens_per_step_;
  s.plain_step_s = target_.decode(batch, context).time_s;
  s.tokens_per_s = s.step_s > 0 ? b * tokens_per_step_ / s.step_s : 0;
  s.plain_tokens_per_s = s.plain_step_s > 0 ? b / s.plain_step_s : 0;
  return s;
}

SpecSweep spec_sweep(const SpecTimeModel& t, int64_t context, int64_t max_batch) {
  SpecSweep w;
  w.max_batch = std::max<int64_t>(1, max_batch);
  int64_t last_faster = 0;
  for (int64_t b = 1;; b = std::min(b * 2, w.max_batch)) {
    w.rows.push_back(t.at(b, context));
    if (w.turns_at_batch == 0) {
      if (w.rows.back().speedup() < 1) {
        // Where it turns, between the last faster power of two and this one.
        int64_t lo = last_faster, hi = b;
        while (hi - lo > 1) {
          const int64_t mid = lo + (hi - lo) / 2;
          (t.at(mid, context).speedup() < 1 ? hi : lo) = mid;
        }
        w.turns_at_batch = hi;
      } else {
        last_faster = b;
      }
    }
    if (b == w.max_batch) break;
  }
  return w;
}

SpecPlan make_spec_plan(const ModelConfig& target, const GpuSpec& g, const ServingOptions& o, const Plan& p) {
  SpecPlan r;
  r.spec = *o.spec;
  r.acceptance = resolve_acceptance(r.spec, target);
  r.tokens_per_step = expected_tokens_per_step(r.acceptance.rates);
  r.slots_per_step = spec_slots_per_step(r.spec);
  r.memory = spec_memory(target, o);
  const SpecTimeModel t(target, g, o);
  r.at_batch = t.at(p.batch, p.context_tokens);
  const int64_t held = std::max<int64_t>(1, p.capacity.max_concurrent_requests);
  r.sweep = spec_sweep(t, p.context_tokens, std::min(held, o.max_num_seqs));
  return r;
}

}  // namespace kvplan
