// The what-if page `kvplan serve` serves: web/index.html (HTML, CSS and JavaScript, nothing
// fetched from elsewhere), compiled into the binary at build time.
#pragma once

#include <string_view>

namespace kvplan::web {

std::string_view page_html();

}  // namespace kvplan::web
