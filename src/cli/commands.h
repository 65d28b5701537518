// Sub-commands of the `strata` command line. Each registers its options on
// the CLI11 app and returns the callback that runs it.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

void add_run(CLI::App& app);
void add_info(CLI::App& app);
void add_cat(CLI::App& app);
void add_convert(CLI::App& app);
void add_analyze(CLI::App& app);
void add_efg(CLI::App& app);
void add_ctl(CLI::App& app);    // ctl.cc
void add_serve(CLI::App& app);  // ctl.cc

// Directory of the running strata binary (for finding libstrata.so and the
// Python layer next to it).
std::string self_dir();

}  // namespace strata::cli
