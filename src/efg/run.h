// `strata efg` without the command line parser: reads any input through
// open_source(), builds one graph state per unit and merges them, renders.
#pragma once

#include <ostream>
#include <string>

#include "efg/builder.h"

namespace strata::efg {

struct EfgOptions {
  std::string input;
  bool json = false;
  std::string dot_file;
  std::string svg_file;
  std::string file_class = "dir";
  bool no_size_classes = false;
  int64_t pid = -1;  // graph drawn by --dot/--svg; -1: the only process, else the job
  int threads = 0;   // units read in parallel; 0: up to 2
};

// Builds the merged state of every unit of `input`, `threads` units at a time
// (0: up to 2), merged in unit order. InputError on bad input.
Builder build_input(const std::string& input, const BuilderOptions& opts, std::ostream& warnings, int threads = 0);

// Returns the exit status; errors are written to err naming what is wrong.
int run_efg(const EfgOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace strata::efg
