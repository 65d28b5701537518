// The live page as served at GET /: web/live.html with its placeholders
// replaced by web/live.js, web/live.css, Chart.js and the access token (all
// embedded at build time, see CMakeLists.txt).
#pragma once

#include <string>

namespace strata::live {

std::string live_page(const std::string& token);

}  // namespace strata::live
