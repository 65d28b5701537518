// `strata analyze`: wired to the analysis library (src/analysis) when built.
#include "cli/commands.h"

namespace strata::cli {
void add_analyze(CLI::App&) {}
}  // namespace strata::cli
