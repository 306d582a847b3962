// Speculative decoding flags, in vLLM's spelling (--speculative-config JSON) and in
// SGLang's (--speculative-algorithm and its step counts), plus the acceptance inputs.
// docs/speculative.md describes each; planner/speculative.h models them.
#include "cli/spec_options.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "io/config_io.h"

namespace kvplan::cli {

namespace {

const std::string kWhere = "command line";
constexpr const char* kVllmKey = "--speculative-config";

std::string arg(const po::variables_map& vm, const char* name) { return vm[name].as<std::string>(); }

ModelConfig load_draft(const std::string& name, const std::string& key) {
  try {
    return io::load_model(name);
  } catch (const InputError& e) {
    throw InputError(kWhere, key, "the draft's config: a catalog model or a config.json / YAML file (" +
                                      std::string(e.what()) + ")",
                     "'" + name + "'");
  }
}

// vLLM's SpeculativeConfig fields kvplan reads; any other key would change what runs.
void from_vllm_json(const std::string& text, SpecDecode& s) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw InputError(kWhere, kVllmKey, "a JSON object ({\"method\": ..., \"num_speculative_tokens\": ...})",
                     "'" + text + "'");
  }
  if (!j.is_object())
    throw InputError(kWhere, kVllmKey, "a JSON object ({\"method\": ..., \"num_speculative_tokens\": ...})",
                     "'" + text + "'");
  for (const auto& [key, value] : j.items())
    if (key != "method" && key != "model" && key != "num_speculative_tokens")
      throw InputError(kWhere, kVllmKey, "the keys method, model and num_speculative_tokens", "'" + key + "'");
  const auto method = j.find("method");
  if (method == j.end() || !method->is_string())
    throw InputError(kWhere, std::string(kVllmKey) + " method", kSpecMethodNames.expected(), "nothing");
  const auto m = kSpecMethodNames.parse(method->get<std::string>());
  if (!m) throw InputError(kWhere, std::string(kVllmKey) + " method", kSpecMethodNames.expected(), "'" + method->get<std::string>() + "'");
  s.method = *m;
  const auto k = j.find("num_speculative_tokens");
  if (k == j.end() || !k->is_number_integer())
    throw InputError(kWhere, std::string(kVllmKey) + " num_speculative_tokens", "an integer >= 1",
                     k == j.end() ? "nothing" : "'" + k->dump() + "'");
  s.num_speculative_tokens = k->get<int64_t>();
  if (const auto model = j.find("model"); model != j.end()) {
    if (!model->is_string())
      throw InputError(kWhere, std::string(kVllmKey) + " model", "a model name or file", "'" + model->dump() + "'");
    s.draft_name = model->get<std::string>();
  }
}

// SGLang's ServerArgs: --speculative-algorithm, --speculative-num-steps (draft passes),
// --speculative-eagle-topk (branches per step; 1 = a chain), --speculative-num-draft-tokens
// (tokens verified; num_steps + 1 for a chain), --speculative-draft-model-path.
void from_sglang(const po::variables_map& vm, SpecDecode& s) {
  const std::string algorithm = arg(vm, "speculative-algorithm");
  if (algorithm == "EAGLE") {
    s.method = SpecMethod::eagle;
  } else if (algorithm == "EAGLE3") {
    s.method = SpecMethod::eagle3;
  } else if (algorithm == "NEXTN") {
    s.method = SpecMethod::mtp;
  } else if (algorithm == "STANDALONE") {
    s.method = SpecMethod::draft_model;
  } else if (algorithm == "NGRAM") {
    s.method = SpecMethod::ngram;
  } else {
    throw InputError(kWhere, "--speculative-algorithm", "EAGLE, EAGLE3, NEXTN, STANDALONE or NGRAM", "'" + algorithm + "'");
  }
  if (!vm.count("speculative-num-steps"))
    throw InputError(kWhere, "--speculative-num-steps", "the draft tokens per step (an integer >= 1)", "nothing");
  s.num_speculative_tokens = parse_int_option(arg(vm, "speculative-num-steps"), "--speculative-num-steps");
  if (vm.count("speculative-eagle-topk")) {
    const int64_t topk = parse_int_option(arg(vm, "speculative-eagle-topk"), "--speculative-eagle-topk");
    if (topk != 1)
      throw InputError(kWhere, "--speculative-eagle-topk", "1 (a chain of drafts; tree drafting is not modelled)",
                       std::to_string(topk));
  }
  if (vm.count("speculative-num-draft-tokens")) {
    const int64_t n = parse_int_option(arg(vm, "speculative-num-draft-tokens"), "--speculative-num-draft-tokens");
    if (n != s.num_speculative_tokens + 1)
      throw InputError(kWhere, "--speculative-num-draft-tokens",
                       "--speculative-num-steps + 1 = " + std::to_string(s.num_speculative_tokens + 1) +
                           " (a chain verifies its drafts and the token before them)",
                       std::to_string(n));
  }
  if (vm.count("speculative-draft-model-path")) s.draft_name = arg(vm, "speculative-draft-model-path");
}

}  // namespace

void add_spec_options(po::options_description& desc) {
  const auto s = [] { return po::value<std::string>(); };
  desc.add_options()
      ("speculative-config", s(),
       "vLLM's speculative decoding JSON: {\"method\": eagle|eagle3|mtp|ngram|draft_model, \"model\": DRAFT, "
       "\"num_speculative_tokens\": K} (docs/speculative.md)")
      ("speculative-algorithm", s(), "SGLang's: EAGLE|EAGLE3|NEXTN|STANDALONE|NGRAM (with --speculative-num-steps)")
      ("speculative-num-steps", s(), "SGLang: draft tokens per step (K)")
      ("speculative-eagle-topk", s(), "SGLang: draft branches per step (1: a chain, the only shape modelled)")
      ("speculative-num-draft-tokens", s(), "SGLang: tokens verified per step (K + 1 for a chain)")
      ("speculative-draft-model-path", s(), "SGLang: the draft (a catalog model or a config file)")
      ("acceptance-rate", s(),
       "speculative decoding: P(draft token i accepted | the ones before it), one per draft position or one for all")
      ("acceptance-length", s(), "speculative decoding: mean tokens per step per sequence, the target's own included");
}

std::shared_ptr<const SpecDecode> parse_spec_options(const po::variables_map& vm) {
  const bool vllm = vm.count("speculative-config") > 0, sglang = vm.count("speculative-algorithm") > 0;
  if (!vllm && !sglang) {
    for (const char* flag : {"speculative-num-steps", "speculative-eagle-topk", "speculative-num-draft-tokens",
                             "speculative-draft-model-path", "acceptance-rate", "acceptance-length"})
      if (vm.count(flag))
        throw InputError(kWhere, "--" + std::string(flag), "--speculative-config or --speculative-algorithm with it",
                         "no speculative decoding");
    return nullptr;
  }
  if (vllm && sglang)
    throw InputError(kWhere, "--speculative-algorithm", "one spelling: --speculative-config (vLLM) or it (SGLang)",
                     "both");
  auto s = std::make_shared<SpecDecode>();
  if (vllm) {
    for (const char* flag : {"speculative-num-steps", "speculative-eagle-topk", "speculative-num-draft-tokens",
                             "speculative-draft-model-path"})
      if (vm.count(flag))
        throw InputError(kWhere, "--" + std::string(flag), "SGLang's --speculative-algorithm with it",
                         "--speculative-config");
    from_vllm_json(arg(vm, "speculative-config"), *s);
  } else {
    from_sglang(vm, *s);
  }
  const std::string model_key = vllm ? std::string(kVllmKey) + " model" : "--speculative-draft-model-path";
  if (!s->draft_name.empty()) {
    if (s->method == SpecMethod::mtp || s->method == SpecMethod::ngram)
      throw InputError(kWhere, model_key,
                       "no draft for " + std::string(to_string(s->method)) +
                           " (MTP layers come from the target's checkpoint; n-gram drafts from the prompt)",
                       "'" + s->draft_name + "'");
    s->draft = load_draft(s->draft_name, model_key);
  }
  if (vm.count("acceptance-rate")) {
    const std::string text = arg(vm, "acceptance-rate");
    size_t start = 0;
    while (true) {
      const size_t comma = text.find(',', start);
      const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      s->acceptance_rates.push_back(parse_num_option(item, "--acceptance-rate", 0.0, 1.0));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (vm.count("acceptance-length"))
    s->acceptance_length = parse_num_option(arg(vm, "acceptance-length"), "--acceptance-length", 1.0, 1e6);
  return s;
}

}  // namespace kvplan::cli
