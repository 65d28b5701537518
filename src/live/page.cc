// Assembles the live page from the files embedded at build time.
#include "live/page.h"

#include <utility>
#include <vector>

namespace strata::analysis {
// Embedded by src/analysis/embed.cmake (src/live/CMakeLists.txt; Chart.js by src/analysis).
extern const char kChartJs[];
extern const char kLiveHtml[];
extern const char kLiveJs[];
extern const char kLiveCss[];
}  // namespace strata::analysis

namespace strata::live {
namespace {

std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

// Fills the placeholders of `page` in one pass over it: text inserted for one
// placeholder (a script, which may mention another's name) is never searched.
std::string fill(const std::string& page, const std::vector<std::pair<std::string, std::string>>& values) {
  std::string out;
  size_t from = 0;
  while (true) {
    size_t next = std::string::npos;
    const std::pair<std::string, std::string>* which = nullptr;
    for (const auto& v : values)
      if (size_t at = page.find(v.first, from); at < next) next = at, which = &v;
    if (!which) break;
    out.append(page, from, next - from).append(which->second);
    from = next + which->first.size();
  }
  return out.append(page, from, std::string::npos);
}

}  // namespace

std::string live_page(const std::string& token) {
  // The token goes into the page and its script, never into Chart.js.
  return fill(analysis::kLiveHtml, {{"__STRATA_TOKEN__", token},
                                    {"/*STRATA_LIVE_CSS*/", analysis::kLiveCss},
                                    {"/*STRATA_LIVE_JS*/", replace_all(analysis::kLiveJs, "__STRATA_TOKEN__", token)},
                                    {"/*STRATA_CHART_JS*/", analysis::kChartJs}});
}

}  // namespace strata::live
