// The one input detector of every command: what kind of trace a path holds.
#pragma once

#include <string>
#include <vector>

namespace strata::importer {

enum class InputKind {
  kStrata,    // a strata trace directory or .strata file
  kDftracer,  // a DFTracer .pfw/.pfw.gz file, or a directory of them
  kChrome,    // a Chrome/Perfetto trace JSON (not read: an error says so)
  kUnknown,
};

struct Detected {
  InputKind kind = InputKind::kUnknown;
  std::string why;  // for kChrome/kUnknown: the message to show
};

// Never throws. A missing path, an empty file, or a directory with neither
// kind of file is kUnknown with a message.
Detected detect_input(const std::string& path);

bool looks_like_pfw(const std::string& path);  // by name: .pfw or .pfw.gz

// The DFTracer files of a path: itself, or a directory's .pfw/.pfw.gz files
// (sorted). Throws ImportError when there are none.
std::vector<std::string> dftracer_files(const std::string& path);

}  // namespace strata::importer
