// `strata analyze`: the analysis library's command (src/analysis/analyze_cli.h).
#include "analysis/analyze_cli.h"
#include "cli/commands.h"

namespace strata::cli {
void add_analyze(CLI::App& app) { strata::analysis::add_analyze_command(app); }
}  // namespace strata::cli
