// CLI11 hook for `strata analyze` (header-only: the analysis library itself
// does not depend on CLI11). In src/cli:
//
//   #include "analysis/analyze_cli.h"
//   void add_analyze(CLI::App& app) { strata::analysis::add_analyze_command(app); }
#pragma once

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "analysis/analyze.h"

namespace strata::analysis {

inline CLI::App* add_analyze_command(CLI::App& app) {
  auto opts = std::make_shared<AnalyzeOptions>();
  auto cap = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("analyze", "Analyze a strata trace or DFTracer .pfw/.pfw.gz trace");
  sub->add_option("trace", opts->input, "trace directory or file (.strata, .pfw, .pfw.gz, or a directory)")
      ->required();
  sub->add_flag("--json", opts->json, "every figure as JSON");
  sub->add_option("--html", opts->html, "write a self-contained report page with charts");
  sub->add_flag("--darshan", opts->darshan, "Darshan counters in darshan-parser's text layout");
  sub->add_option("--by", opts->by, "break figures down by this tag key (epoch, step, stage, ...)");
  sub->add_option("--stage-capacity", *cap, "staging advice for a fast tier of this size (e.g. 8GiB)");
  sub->add_option("--stage-speedup", opts->stage_speedup, "fast tier speed relative to the observed one (4)");
  sub->add_option("-j,--threads", opts->threads,
                  "worker threads: one per process file; given, and with fewer files, the rest decode blocks ahead and run the passes of one file side by side (default: up to 2, neither)");
  sub->add_option("--top", opts->top, "rows of the text tables: files, functions, staging (3)");
  sub->add_flag("--all", opts->all, "lift the text report's limits; list environment files one by one");
  sub->add_option("--section", opts->sections,
                  "only this text section (a pass name: verdict, dl, critical_path, overlap, functions, structure, files, sizes, staging, ...)")
      ->allow_extra_args(false);  // one name per --section: the trace is not swallowed
  sub->add_option("--path", opts->path, "only files whose path starts with PREFIX (text, JSON files, --darshan)");
  sub->callback([opts, cap]() {
    if (!cap->empty()) {
      opts->stage_capacity = parse_size(*cap);
      if (opts->stage_capacity < 0) throw CLI::ValidationError("--stage-capacity", "bad size: " + *cap);
    }
    opts->exiting = true;  // the command's process ends after the report
    int rc = run_analyze(*opts, std::cout, std::cerr);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
  return sub;
}

}  // namespace strata::analysis
