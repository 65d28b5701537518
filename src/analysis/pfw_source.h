// DFTracer traces (1.x: JSON lines in a JSON array; 2.x: JSON lines) and
// .pfw.gz, one file or a directory of them, as an analysis Source. Reading is
// src/importer's (byte stream -> lines -> records); this maps records onto
// IoEvents, one per call (an aggregated record stands for dft_cnt calls).
#pragma once

#include <string>
#include <vector>

#include "analysis/model.h"
#include "importer/line_reader.h"

namespace strata::analysis {

// Longest line the importer accepts (a DFTracer event line is < 64 KiB): a
// longer one is an error naming the file and line; memory stays bounded by it
// plus one 1 MiB read buffer, whatever the file (or a gzip bomb) holds.
inline constexpr size_t kMaxPfwLine = importer::kMaxLine;

// Unescapes a JSON string's content (p just after its opening quote, up to the
// closing quote, never past end) into out. \udc80..\udcff alone decode to the
// raw bytes 0x80..0xff (surrogateescape). Returns nullptr, or what is wrong.
const char* unescape_json_string(const char* p, const char* end, std::string& out);

class PfwSource : public Source {
 public:
  // path: a .pfw/.pfw.gz file or a directory holding some. Throws InputError.
  explicit PfwSource(const std::string& path);
  const std::vector<std::string>& units() const override { return files_; }
  void read_unit(size_t i, UnitConsumer& c) override;
  const char* kind() const override { return "dftracer"; }
  // Earliest timestamp (us) seen in the files' first events: trace time 0.
  int64_t base_us() const { return base_us_; }

 private:
  std::vector<std::string> files_;
  int64_t base_us_ = 0;
};

bool looks_like_pfw(const std::string& path);

}  // namespace strata::analysis
