// `strata efg --compress`: rewrites a strata trace with its events stored as
// temporal event flow graphs (EFG blocks, docs/trace-format.md §19) instead
// of EVENTS blocks. Every other block (process, dictionaries, stats,
// profile) is copied as it is, so `strata cat` of the result is
// byte-identical to `strata cat` of the input; with no_times the time
// columns are left out (and only they). Depends on the reader library and
// src/format only.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace strata::efg {

struct CompressOptions {
  std::string input;   // a strata trace directory or file
  std::string output;  // a directory, created (it must not exist, or be empty)
  bool no_times = false;
};

struct CompressResult {
  uint64_t files = 0;
  uint64_t events = 0;
  uint64_t input_bytes = 0;   // the input's .strata files
  uint64_t output_bytes = 0;  // the output's
  uint64_t efg_blocks = 0;
  uint64_t nodes = 0;       // summed over EFG blocks
  uint64_t partitions = 0;  // summed over EFG blocks and threads
};

// Throws reader::FormatError on a corrupt input, std::runtime_error when the
// output cannot be written.
CompressResult compress_trace(const CompressOptions& opts);

// The ratios a user asks for: against the native trace and per event.
void print_compress_summary(const CompressOptions& opts, const CompressResult& r, std::ostream& out);

}  // namespace strata::efg
