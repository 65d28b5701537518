// FileReader's walk through the blocks of a file (stages in block.h): in
// turn on the calling thread, or with stage 2 on worker threads ahead of it
// (pipeline.h). Both run the same stage functions, so a file gives the same
// batches, dictionary and errors either way.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>
#include <zstd.h>

#include "format/format.h"
#include "reader/block.h"
#include "reader/pipeline.h"
#include "strata/reader.h"

namespace strata::reader {

namespace fmt = strata::format;

bool FileReader::read_at(void* buf, size_t n, uint64_t offset) const {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

// Stage 1: the next block's header, checked, and where the block after it
// starts. A block cut short by the end of the file is not read (a killed
// writer); scanning it again gives the same answer.
ScanOutcome FileReader::scan_block(BlockJob& job) {
  job.place = {};
  if (scan_pos_ >= file_size_) return ScanOutcome::kEnd;
  job.place = {&path_, ++scan_index_, scan_pos_};
  fmt::BlockHeader& h = job.header;
  if (file_size_ - scan_pos_ < sizeof(h)) return ScanOutcome::kTruncated;
  if (!read_at(&h, sizeof(h), scan_pos_)) job.place.fail("read error");
  if (h.magic != fmt::kBlockMagic) job.place.fail("bad block magic (corrupt file)");
  if (fmt::header_hash_of(h) != h.header_hash) job.place.fail("block header checksum mismatch (corrupt file)");
  if (h.stored_size > fmt::kMaxBlockPayload || h.raw_size > fmt::kMaxBlockPayload) {
    job.place.fail("block size out of range");
  }
  if (scan_pos_ + sizeof(h) + h.stored_size > file_size_) return ScanOutcome::kTruncated;
  scan_pos_ += sizeof(h) + h.stored_size;
  return ScanOutcome::kBlock;
}

namespace {
// The payload of a block as its codec stored it (trace-format.md §5).
void decompress(const BlockPlace& at, const fmt::BlockHeader& h, ZSTD_DCtx* dctx, std::vector<uint8_t>& stored,
                std::vector<uint8_t>& payload) {
  if (h.codec == static_cast<uint8_t>(fmt::Codec::kNone)) {
    if (h.raw_size != h.stored_size) at.fail("uncompressed block with raw size != stored size");
    payload.swap(stored);
  } else if (h.codec == static_cast<uint8_t>(fmt::Codec::kZstd)) {
    payload.resize(h.raw_size);
    size_t n = ZSTD_decompressDCtx(dctx, payload.data(), payload.size(), stored.data(), stored.size());
    if (ZSTD_isError(n) || n != h.raw_size) at.fail("zstd payload does not decompress to its raw size");
  } else if (h.codec == static_cast<uint8_t>(fmt::Codec::kZstdPrefix)) {
    // One zstd frame, then raw bytes: payload = decompressed frame + those bytes.
    const size_t frame = ZSTD_findFrameCompressedSize(stored.data(), stored.size());
    if (ZSTD_isError(frame) || frame > stored.size()) at.fail("zstd-prefix payload does not start with a complete zstd frame");
    const size_t tail = stored.size() - frame;
    if (tail > h.raw_size) {
      at.fail("zstd-prefix payload: raw tail of " + std::to_string(tail) + " bytes exceeds the raw size " +
              std::to_string(h.raw_size));
    }
    payload.resize(h.raw_size);
    const size_t want = h.raw_size - tail;
    size_t n = ZSTD_decompressDCtx(dctx, payload.data(), want, stored.data(), frame);
    if (ZSTD_isError(n) || n != want) {
      at.fail("zstd-prefix payload: the zstd frame does not decompress to " + std::to_string(want) +
              " bytes (raw size minus the raw tail)");
    }
    if (tail) std::memcpy(payload.data() + want, stored.data() + frame, tail);
  } else {
    at.fail("unknown codec " + std::to_string(h.codec));
  }
}
}  // namespace

// Stage 2: reads only the job, the file and the process's clock (fixed
// once the constructor has read the PROCESS block), so any thread may run it.
void FileReader::load_block(BlockJob& job, void* dctx, bool decode) const {
  const fmt::BlockHeader& h = job.header;
  const BlockPlace& at = job.place;
  job.stored.resize(h.stored_size);
  if (h.stored_size && !read_at(job.stored.data(), h.stored_size, at.offset + sizeof(h))) at.fail("read error");
  if (XXH3_64bits(job.stored.data(), job.stored.size()) != h.payload_hash) {
    at.fail("payload checksum mismatch (corrupt block)");
  }
  decompress(at, h, static_cast<ZSTD_DCtx*>(dctx), job.stored, job.payload);
  if (decode && h.type == static_cast<uint8_t>(fmt::BlockType::kEvents)) {
    EventBatch& out = job.target ? *job.target : job.batch;
    decode_events(at, TickClock(process_), job.payload.data(), job.payload.size(), h.count, out, job.ids);
  }
}

// Stage 3, in file order on the thread calling next().
FileReader::Step FileReader::apply_block(BlockJob& job, EventBatch& out) {
  if (job.place.file) {
    block_index_ = job.place.index;
    block_offset_ = job.place.offset;
  }
  if (job.error) std::rethrow_exception(job.error);
  if (job.outcome == ScanOutcome::kTruncated) truncated_tail_ = true;
  if (job.outcome != ScanOutcome::kBlock) return Step::kEnd;
  const uint32_t count = job.header.count;
  switch (static_cast<fmt::BlockType>(job.header.type)) {
    case fmt::BlockType::kEvents:
      if (!job.target) std::swap(out, job.batch);
      check_event_ids(job.place, out, job.ids, dict_);
      return Step::kBatch;
    case fmt::BlockType::kEfg: decode_efg(job.payload, count); break;
    case fmt::BlockType::kDict:
      if (options_.before_dict_change) options_.before_dict_change();
      decode_dict(job.payload, count);
      break;
    case fmt::BlockType::kStats: decode_stats(job.payload); break;
    case fmt::BlockType::kProfile: decode_profile(job.payload); break;
    case fmt::BlockType::kFooter: footer_seen_ = true; break;
    case fmt::BlockType::kProcess: fail("second PROCESS block");
    default: break;  // unknown block types are skipped (forward compatible)
  }
  return Step::kMore;
}

bool FileReader::next(EventBatch& out) {
  if (failed_) std::rethrow_exception(failed_);
  try {
    return ahead_ ? next_ahead(out) : next_in_turn(out);
  } catch (const FormatError&) {
    failed_ = std::current_exception();
    throw;
  }
}

// Stages 1 and 2 on this thread; a failure travels in the job to stage 3,
// as from the pipeline, so that blocks_read() names the failed block.
void FileReader::scan_and_load(BlockJob& job, bool decode) {
  job.error = nullptr;
  try {
    job.outcome = scan_block(job);
    if (job.outcome == ScanOutcome::kBlock) load_block(job, dctx_, decode);
  } catch (const FormatError&) {
    job.error = std::current_exception();
  }
}

bool FileReader::next_in_turn(EventBatch& out) {
  BlockJob& job = *job_;
  job.target = &out;
  while (true) {
    if (next_efg_batch(out)) return true;
    scan_and_load(job);
    const Step step = apply_block(job, out);
    if (step != Step::kMore) return step == Step::kBatch;
  }
}

// Stage 1 for as many blocks as the pipeline holds; it stops at the end of
// the file or at its first error, which stage 3 then meets in file order.
void FileReader::fill_pipeline() {
  while (!scan_done_ && pipeline_->has_room()) {
    BlockJob& job = pipeline_->spare();
    try {
      job.outcome = scan_block(job);
    } catch (const FormatError&) {
      job.error = std::current_exception();
    }
    const bool load = !job.error && job.outcome == ScanOutcome::kBlock;
    scan_done_ = !load;
    pipeline_->push(load);
  }
}

bool FileReader::next_ahead(EventBatch& out) {
  if (!pipeline_) {
    const unsigned workers = options_.decode_threads;
    pipeline_ = std::make_unique<BlockPipeline>(workers, 2 * (size_t{workers} + 1),
                                                [this](BlockJob& job, ZSTD_DCtx* dctx) { load_block(job, dctx, true); });
  }
  while (true) {
    if (next_efg_batch(out)) return true;
    fill_pipeline();
    BlockJob& job = pipeline_->head(static_cast<ZSTD_DCtx*>(dctx_));
    const Step step = apply_block(job, out);
    if (step == Step::kEnd) return false;  // the end stays queued: later calls end too
    pipeline_->pop();
    if (step == Step::kBatch) return true;
  }
}

uint64_t FileReader::skip_events_block() {
  if (pipeline_) {
    throw std::logic_error("FileReader::skip_events_block: the reader has read ahead (decode_threads)");
  }
  // EVENTS payloads are skipped unread (their count is in the checked
  // header); other blocks are read as usual (dictionaries, stats, profile).
  // An EFG block is decoded (it holds the batches of several EVENTS blocks).
  if (efg_next_ < efg_batches_.size()) return efg_batches_[efg_next_++].size_events();
  BlockJob& job = *job_;
  EventBatch unused;  // apply_block hands out no EVENTS block here
  while (scan_pos_ < file_size_) {
    fmt::BlockHeader h{};
    if (file_size_ - scan_pos_ < sizeof(h)) {
      truncated_tail_ = true;
      return 0;
    }
    if (!read_at(&h, sizeof(h), scan_pos_)) fail("read error");
    if (h.type == static_cast<uint8_t>(fmt::BlockType::kEvents) && h.magic == fmt::kBlockMagic &&
        fmt::header_hash_of(h) == h.header_hash && h.stored_size <= fmt::kMaxBlockPayload) {
      if (scan_pos_ + sizeof(h) + h.stored_size > file_size_) {
        truncated_tail_ = true;
        return 0;
      }
      block_offset_ = scan_pos_;
      block_index_ = ++scan_index_;
      if (h.count > kMaxBlockEvents) {
        fail("EVENTS block: header claims " + std::to_string(h.count) + " events, more than the reader's limit of " +
             std::to_string(kMaxBlockEvents) + " per block (corrupt block)");
      }
      scan_pos_ += sizeof(h) + h.stored_size;
      return h.count;
    }
    scan_and_load(job, false);  // reports a bad header itself
    if (apply_block(job, unused) == Step::kEnd) return 0;
    if (efg_next_ < efg_batches_.size()) return efg_batches_[efg_next_++].size_events();
  }
  return 0;
}

}  // namespace strata::reader
