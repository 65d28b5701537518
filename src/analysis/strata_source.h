// strata traces through the reader library (include/strata/reader.h). Each
// trace file (one process image) is a unit; its per-thread EVENTS blocks are
// merged into completion-time order (ts + dur) through a bounded window, the
// order in which the runtime (and Darshan) see calls finish.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/model.h"

namespace strata::reader {
class TraceReader;
}

namespace strata::analysis {

class StrataSource : public Source {
 public:
  explicit StrataSource(const std::string& path);  // throws InputError
  ~StrataSource() override;
  const std::vector<std::string>& units() const override { return files_; }
  void read_unit(size_t i, UnitConsumer& c) override;
  const char* kind() const override { return "strata"; }
  void set_threads(unsigned threads) override { threads_ = threads; }
  unsigned unit_threads() const override;
  // Events buffered per file while merging threads (bounded memory).
  static constexpr size_t kWindow = 1u << 16;
  // Events handed to the consumer per UnitConsumer::events call (fits in L1/L2).
  static constexpr size_t kBatch = 256;

 private:
  std::unique_ptr<reader::TraceReader> trace_;
  std::vector<std::string> files_;
  unsigned threads_ = 1;
  size_t threads_per_unit() const;
  unsigned decode_threads() const;
};

bool looks_like_strata(const std::string& path);

}  // namespace strata::analysis
