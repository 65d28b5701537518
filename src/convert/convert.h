// Output formats of a strata trace: JSON lines (`strata cat`), Chrome Trace
// Event JSON (Perfetto UI, chrome://tracing) and DFTracer's .pfw JSON lines.
// Depends on the reader library, fmt and zlib.
#pragma once

#include <cstdio>
#include <string>

namespace strata::convert {

// One JSON object per event per line. Returns the number of events written.
uint64_t write_json_lines(const std::string& trace, FILE* out);

// Chrome Trace Event format (JSON object with traceEvents), to a file path or "-".
uint64_t write_chrome(const std::string& trace, const std::string& out_path);

// DFTracer .pfw (JSON lines in "[" ... "]"); gzip-compressed when out_path ends in .gz.
uint64_t write_pfw(const std::string& trace, const std::string& out_path);

}  // namespace strata::convert
