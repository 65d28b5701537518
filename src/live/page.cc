// Assembles the live page from the files embedded at build time.
#include "live/page.h"

namespace strata::analysis {
// Embedded by src/analysis/embed.cmake (src/live/CMakeLists.txt; Chart.js by src/analysis).
extern const char kChartJs[];
extern const char kLiveHtml[];
extern const char kLiveJs[];
extern const char kLiveCss[];
}  // namespace strata::analysis

namespace strata::live {
namespace {

// Replaces the first `what` in `text`: each placeholder appears once, and the
// inserted file may itself contain the placeholder's text.
void replace_once(std::string& text, const std::string& what, const std::string& with) {
  if (size_t at = text.find(what); at != std::string::npos) text.replace(at, what.size(), with);
}

std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

}  // namespace

std::string live_page(const std::string& token) {
  // The token goes into the page and its script, never into Chart.js.
  std::string page = replace_all(analysis::kLiveHtml, "__STRATA_TOKEN__", token);
  replace_once(page, "/*STRATA_LIVE_CSS*/", analysis::kLiveCss);
  replace_once(page, "/*STRATA_LIVE_JS*/", replace_all(analysis::kLiveJs, "__STRATA_TOKEN__", token));
  replace_once(page, "/*STRATA_CHART_JS*/", analysis::kChartJs);
  return page;
}

}  // namespace strata::live
