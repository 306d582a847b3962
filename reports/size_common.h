// kvplan reports: pieces every rendering of a size::SizeResult shares (labels, money,
// the recommendation's sentences, assumptions). Internal to reports/; the public entry
// points are in size_report.h. Renders only: every decision comes from size/.
#pragma once

#include <string>
#include <vector>

#include "size/size.h"

namespace kvplan::reports::size_detail {

std::string weight_label(const size::Deployment& o);
std::string kv_dtype_label(const size::Deployment& o);
//! "fp8", "int4 kvquant": the dtype, and the scheme for a quantized cache.
std::string kv_label(const size::Deployment& o);
//! "continuous, 256 seqs" or "chunked, 128 seqs, 4096 tok": the engine limits searched.
std::string engine_label(const size::Deployment& o);
//! What binds, "max-num-seqs (default)" when the limit is the engine's default.
std::string binds_label(const size::Deployment& o);
//! "$1.33", "n/a" when the GPU has no price.
std::string money(std::optional<double> v);
//! Small amounts keep three significant digits: "$0.000123".
std::string money_small(std::optional<double> v);
//! Short category of a pruning reason: the text before the first ':'.
std::string reason_kind(const std::string& reason);
std::vector<std::string> assumptions(const size::SizeResult& r);
std::string validation_status(const size::SizeResult& r);
//! How the candidates were evaluated, as the summary lines say it: "simulated", or the
//! planner's closed form under `--evaluator planner`.
std::string evaluated_how(const size::SizeResult& r);

// ---- the recommendation in words (text and HTML say the same)
//! "$1.33/h: $0.16 per million output tokens, $0.029 per million input tokens, $0.000034 per request"
std::string costs(const size::Deployment& o);
//! "max 14.09 requests/s per replica (13.90-14.30 over 3 seeds)".
std::string max_rate(const size::Deployment& o, const size::Recommendation& rec);
//! "bound by max-num-seqs (engine default 256, not set by you)" or "bound by bandwidth".
std::string binding(const size::Deployment& o, const size::Recommendation& rec);
//! Load per replica and the N+1 statement.
std::string headroom(const size::SizeResult& r, const size::Recommendation& rec);
//! Why a model has no option meeting the SLO.
std::string unmet_reason(const size::Unmet& u);
//! Why requests were rejected at the max rate, or "".
std::string rejected_note(const size::Deployment& o);

}  // namespace kvplan::reports::size_detail
