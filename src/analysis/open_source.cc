#include "analysis/open_source.h"

#include "analysis/pfw_source.h"
#include "importer/detect.h"
#ifdef STRATA_ANALYSIS_HAVE_READER
#include "analysis/strata_source.h"
#endif

namespace strata::analysis {

std::unique_ptr<Source> open_source(const std::string& input) {
  importer::Detected d = importer::detect_input(input);
  switch (d.kind) {
    case importer::InputKind::kStrata:
#ifdef STRATA_ANALYSIS_HAVE_READER
      return std::make_unique<StrataSource>(input);
#else
      throw InputError(input + ": strata traces need the reader library (not built)");
#endif
    case importer::InputKind::kDftracer:
      return std::make_unique<PfwSource>(input);
    default:
      throw InputError(d.why);
  }
}

}  // namespace strata::analysis
