// Tiny driver for `strata analyze` before the CLI wires it: same options.
#include <CLI/CLI.hpp>

#include "analysis/analyze_cli.h"

int main(int argc, char** argv) {
  CLI::App app{"strata analyze (test driver)"};
  strata::analysis::add_analyze_command(app);
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
