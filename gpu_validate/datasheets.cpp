#include "gpu_validate/datasheets.h"

#include <algorithm>

namespace kvplan::gv {

const std::vector<Datasheet>& datasheets() {
  static const std::vector<Datasheet> rows = {
#include "gpu_datasheets.inc"
  };
  return rows;
}

std::optional<Datasheet> datasheet_for_device(std::string_view cuda_device_name) {
  const auto& rows = datasheets();
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const Datasheet& d) { return d.device_name == cuda_device_name; });
  if (it == rows.end()) return std::nullopt;
  return *it;
}

const std::vector<GemmShape>& catalog_gemm_shapes() {
  static const std::vector<GemmShape> rows = {
#include "gemm_shapes.inc"
  };
  return rows;
}

}  // namespace kvplan::gv
