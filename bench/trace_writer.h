// A minimal strata trace file writer for benchmarks and generators: header,
// PROCESS block, DICT blocks, EVENTS blocks, STATS and FOOTER, laid out the
// way the runtime's writer does it (src/runtime/writer.cc), with the encoder
// and framer of src/format/encoder.h. Not used by the runtime.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/encoder.h"
#include "format/format.h"

namespace strata::bench {

namespace fmt = strata::format;

class TraceFileWriter {
 public:
  TraceFileWriter(const std::string& path, size_t max_block_events, int zstd_level = 1)
      : path_(path), encoder_(max_block_events), framer_(zstd_level) {
    fp_ = std::fopen(path.c_str(), "wb");
    if (!fp_) throw std::runtime_error("cannot create " + path);
    std::setvbuf(fp_, nullptr, _IOFBF, 1 << 20);
    fmt::FileHeader h = fmt::make_file_header();
    put(&h, sizeof(h));
    payload_.reserve(max_block_events * 20 * fmt::kNumColumns + 64);
  }
  ~TraceFileWriter() {
    if (fp_) std::fclose(fp_);
  }
  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;

  size_t max_block_events() const { return encoder_.max_events(); }
  fmt::ByteSink& dict() { return dict_; }  // append dict_* entries, then flush_dict()

  void process(const fmt::ProcessRecord& p) {
    payload_.clear();
    fmt::encode_process(p, payload_);
    block(fmt::BlockType::kProcess, 0, false);
  }
  // Writes the DICT entries appended to dict() since the last call.
  void flush_dict(uint32_t entries) {
    if (!entries) return;
    payload_.bytes().swap(dict_.bytes());
    block(fmt::BlockType::kDict, entries, true);
    dict_.clear();
  }
  void events(uint32_t tid, const fmt::EncodeEvent* ev, size_t n) {
    const size_t prefix = encoder_.encode(tid, ev, n, payload_);
    block(fmt::BlockType::kEvents, static_cast<uint32_t>(n), true, prefix);
    events_ += n;
  }
  // STATS + FOOTER; closes the file.
  void finish() {
    payload_.clear();
    fmt::encode_stats(payload_, events_, 0);
    block(fmt::BlockType::kStats, 0, false);
    uint64_t at = offset_;
    payload_.clear();
    fmt::encode_footer(payload_, index_, events_, 0, at);
    block(fmt::BlockType::kFooter, 0, false);
    if (std::fclose(fp_) != 0) throw std::runtime_error("write failed: " + path_);
    fp_ = nullptr;
  }
  uint64_t bytes() const { return offset_; }
  uint64_t events_written() const { return events_; }

 private:
  void put(const void* p, size_t n) {
    if (std::fwrite(p, 1, n, fp_) != n) throw std::runtime_error("write failed: " + path_);
    offset_ += n;
  }
  void block(fmt::BlockType type, uint32_t count, bool compress, size_t compress_prefix = SIZE_MAX) {
    if (!framer_.frame(type, count, payload_.bytes(), compress, compress_prefix)) {
      throw std::runtime_error("framing failed");
    }
    index_.push_back({static_cast<uint8_t>(type), offset_, count});
    put(framer_.data(), framer_.size());
  }

  std::string path_;
  std::FILE* fp_ = nullptr;
  uint64_t offset_ = 0, events_ = 0;
  fmt::EventsEncoder encoder_;
  fmt::BlockFramer framer_;
  fmt::ByteSink payload_, dict_;
  std::vector<fmt::IndexEntry> index_;
};

}  // namespace strata::bench
