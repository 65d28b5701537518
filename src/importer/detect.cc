#include "importer/detect.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>

#include "importer/byte_stream.h"

namespace strata::importer {

namespace fs = std::filesystem;

namespace {
bool ends_with(const std::string& s, const char* suf) {
  size_t n = std::strlen(suf);
  return s.size() >= n && s.compare(s.size() - n, n, suf) == 0;
}
const char* kReads = "strata reads strata traces (a directory or .strata file) and DFTracer traces (.pfw, .pfw.gz)";
}  // namespace

bool looks_like_pfw(const std::string& path) { return ends_with(path, ".pfw") || ends_with(path, ".pfw.gz"); }

std::vector<std::string> dftracer_files(const std::string& path) {
  std::vector<std::string> out;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (auto& de : fs::directory_iterator(path, ec))
      if (de.is_regular_file() && looks_like_pfw(de.path().string())) out.push_back(de.path().string());
    std::sort(out.begin(), out.end());
    if (out.empty()) throw ImportError(path + ": directory holds no .pfw or .pfw.gz file");
  } else if (fs::exists(path, ec)) {
    out.push_back(path);
  } else {
    throw ImportError(path + ": no such file or directory");
  }
  return out;
}

Detected detect_input(const std::string& path) {
  Detected d;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    d.why = path + ": no such file or directory";
    return d;
  }
  if (fs::is_directory(path, ec)) {
    bool pfw = false, strata = false;
    for (auto& de : fs::directory_iterator(path, ec)) {
      std::string p = de.path().string();
      if (looks_like_pfw(p)) pfw = true;
      if (de.path().extension() == ".strata") strata = true;
    }
    if (strata) d.kind = InputKind::kStrata;
    else if (pfw) d.kind = InputKind::kDftracer;
    else d.why = path + ": directory holds no strata trace file (*.strata) and no DFTracer file (*.pfw, *.pfw.gz)";
    return d;
  }
  if (fs::file_size(path, ec) == 0) {
    d.why = path + ": empty file";
    return d;
  }
  std::string head = read_head(path, 4096);
  if (head.size() >= 8 && std::memcmp(head.data(), "STRATA\0\n", 8) == 0) {
    d.kind = InputKind::kStrata;
    return d;
  }
  size_t k = 0;
  while (k < head.size() && std::isspace(static_cast<unsigned char>(head[k]))) ++k;
  std::string_view rest = std::string_view(head).substr(k);
  // Chrome trace JSON: an object with "traceEvents" (or "systemTraceEvents").
  bool chrome = !rest.empty() && rest[0] == '{' &&
                (rest.find("\"traceEvents\"") != std::string_view::npos ||
                 rest.find("\"systemTraceEvents\"") != std::string_view::npos);
  if (chrome) {
    d.kind = InputKind::kChrome;
    d.why = path + ": this is a Chrome trace (JSON with \"traceEvents\"); " + kReads;
    return d;
  }
  if (looks_like_pfw(path) || (!rest.empty() && (rest[0] == '[' || rest[0] == '{'))) {
    // A JSON array without DFTracer's per-line layout and not named .pfw: a
    // Chrome trace in its array form.
    if (!looks_like_pfw(path) && rest[0] == '[') {
      size_t nl = rest.find('\n');
      std::string_view first = rest.substr(0, nl);
      bool one_per_line = first.find_first_not_of("[ \t\r") == std::string_view::npos;
      if (!one_per_line && ends_with(path, ".json")) {
        d.kind = InputKind::kChrome;
        d.why = path + ": this is a Chrome trace (a JSON array of events); " + kReads;
        return d;
      }
    }
    d.kind = InputKind::kDftracer;
    return d;
  }
  d.why = path + ": not a strata trace or a DFTracer trace (unknown file format); " + kReads;
  return d;
}

}  // namespace strata::importer
