// DFTracer traces: .pfw (JSON lines in a JSON array) and .pfw.gz, one file or
// a directory of them. Streams with zlib + simdjson on demand.
#pragma once

#include <string>
#include <vector>

#include "analysis/model.h"

namespace strata::analysis {

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
