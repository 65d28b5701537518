// Output formats of a strata trace: JSON lines (`strata cat`), Chrome Trace
// Event JSON (Perfetto UI, chrome://tracing) and DFTracer's .pfw JSON lines.
// Depends on the reader library, fmt and zlib.
#pragma once

#include <cstdio>
#include <string>

namespace strata::convert {

// One JSON object per event per line. Returns the number of events written.
// `threads` > 1: a large file's blocks are decoded on threads - 1 more
// threads ahead of the writing (reader::ReadOptions); the output is the same.
uint64_t write_json_lines(const std::string& trace, FILE* out, unsigned threads = 1);

// Chrome Trace Event format (JSON object with traceEvents), to a file path or "-".
uint64_t write_chrome(const std::string& trace, const std::string& out_path);

// DFTracer .pfw; gzip-compressed when out_path ends in .gz. version 1: JSON
// lines in "[" ... "]" (DFTracer 1.x); 2: DFTracer 2.x (JSON lines, integer
// ph/type, hex hashes, an "end" record per process).
uint64_t write_pfw(const std::string& trace, const std::string& out_path, int version = 1);

// A DFTracer trace (.pfw/.pfw.gz file or directory, 1.x or 2.x) as JSON lines
// (`strata cat`) or Chrome JSON. An aggregated record is one line/event with
// "calls" (dft_cnt). Returns the number of records written.
uint64_t write_json_lines_pfw(const std::string& trace, FILE* out);
uint64_t write_chrome_pfw(const std::string& trace, const std::string& out_path);

}  // namespace strata::convert
