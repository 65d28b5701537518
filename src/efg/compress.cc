#include "efg/compress.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/efg_block.h"
#include "format/encoder.h"
#include "format/format.h"
#include "format/temporal_order.h"
#include "strata/reader.h"

namespace strata::efg {

namespace fs = std::filesystem;
namespace ff = strata::format;

namespace {

// The node of an event: its function, the directory of its file and its
// request-size class, the signature `strata efg` draws (file class "dir").
// The exact path, size and every other field go to the node's columns.
class NodeClassifier {
 public:
  explicit NodeClassifier(const reader::Dictionary& dict) : dict_(dict) {}

  uint64_t key(uint32_t name, uint32_t path, int64_t size) {
    const uint64_t size_class = size < 0 ? 0 : size == 0 ? 1 : 2 + (63 - __builtin_clzll(static_cast<uint64_t>(size)));
    return static_cast<uint64_t>(name) << 40 | static_cast<uint64_t>(dir_of(path)) << 7 | size_class;  // dirs < 2^33
  }

 private:
  uint32_t dir_of(uint32_t path) {
    if (path == 0) return 0;
    if (path < dir_by_path_.size() && dir_by_path_[path]) return dir_by_path_[path];
    std::string_view s = dict_.str(path);
    const size_t slash = s.rfind('/');
    std::string dir(slash == std::string::npos ? std::string_view() : s.substr(0, slash));
    auto [it, fresh] = dirs_.try_emplace(std::move(dir), static_cast<uint32_t>(dirs_.size() + 1));
    if (path >= dir_by_path_.size()) dir_by_path_.resize(path + 1, 0);
    return dir_by_path_[path] = it->second;
  }

  const reader::Dictionary& dict_;
  std::unordered_map<std::string, uint32_t> dirs_;
  std::vector<uint32_t> dir_by_path_;
};

// One segment (at most kEfgMaxEvents events) of a file's events, collected
// batch by batch and encoded as one EFG block payload.
class Segment {
 public:
  explicit Segment(const reader::ProcessInfo& proc) : proc_(&proc) {}
  size_t events() const { return events_; }

  void add(const reader::EventBatch& b, size_t from, size_t n, NodeClassifier& classes) {
    size_t ti = thread_index(b.tid);
    Thread& t = threads_[ti];
    if (t.events.empty()) t.first_ts = b.ts[from];
    for (size_t i = from; i < from + n; ++i) {
      const uint64_t key = classes.key(b.name[i], b.path[i], b.size[i]);
      auto [it, fresh] = nodes_.try_emplace(key, static_cast<uint32_t>(node_names_.size() + 1));
      if (fresh) node_names_.push_back(b.name[i]);
      t.seq.push_back(it->second);
      ff::EfgFields e;
      e.path = b.path[i];
      e.ctx = b.ctx[i];
      e.fd = b.fd[i];
      e.err = b.err[i];
      e.offset = b.offset[i];
      e.size = b.size[i];
      e.ret = b.ret[i];
      e.ts = b.ts[i];
      e.dur = b.dur[i];
      e.mem_align = b.mem_align[i];
      t.events.push_back(e);
    }
    blocks_.emplace_back(ti, n);
    events_ += n;
  }

  // The payload (docs/trace-format.md §19); adds to the partition count.
  void encode(bool no_times, ff::ByteSink& out, uint64_t& partitions) {
    const size_t num_nodes = node_names_.size();
    const int ncols = no_times ? ff::kEfgColumnsNoTimes : ff::kEfgColumns;
    const bool ticks = !no_times && proc_->tick_q32 != 0 && times_to_ticks();
    out.clear();
    out.put_varint((no_times ? ff::kEfgNoTimes : 0) | (ticks ? ff::kEfgTicks : 0));
    out.put_varint(num_nodes);
    for (uint32_t name : node_names_) out.put_varint(name);
    out.put_varint(threads_.size());
    for (const Thread& t : threads_) {
      const ff::TemporalOrder order = ff::encode_order(t.seq, num_nodes + 1);
      out.put_varint(t.tid);
      out.put_varint(t.seq.size());
      out.put_varint(t.first_ts);
      out.put_varint(order.first_node);
      for (size_t k = 1; k <= num_nodes; ++k) {
        out.put_varint(order.partitions[k].size());
        partitions += order.partitions[k].size();
        for (const ff::Partition& p : order.partitions[k]) {
          out.put_varint(p.to);
          out.put_varint(p.first);
          out.put_varint(p.last - p.first);
          out.put_varint(p.stride);
          out.put_varint(p.block);
        }
      }
    }
    out.put_varint(blocks_.size());
    for (const auto& [ti, n] : blocks_) {
      out.put_varint(ti);
      out.put_varint(n);
    }
    // Columns per node: every thread's events of the node, in thread order.
    std::vector<std::vector<std::vector<uint64_t>>> cols(num_nodes + 1, std::vector<std::vector<uint64_t>>(ncols));
    uint64_t v[ff::kEfgColumns];
    for (const Thread& t : threads_) {
      ff::EfgThreadCoder coder(t.first_ts);
      for (size_t i = 0; i < t.events.size(); ++i) {
        coder.encode(t.events[i], v);
        auto& node = cols[t.seq[i]];
        for (int c = 0; c < ncols; ++c) node[c].push_back(v[c]);
      }
    }
    ff::ByteSink col;
    for (size_t k = 1; k <= num_nodes; ++k)
      for (int c = 0; c < ncols; ++c) {
        col.clear();
        const ff::ColumnEncoding enc = ff::encode_values_smallest(cols[k][c].data(), cols[k][c].size(), col);
        out.put_u8(static_cast<uint8_t>(enc));
        out.put_varint(col.size());
        out.put_bytes(col.bytes().data(), col.size());
      }
  }

  size_t nodes() const { return node_names_.size(); }

 private:
  // The reader hands out ns; the runtime wrote clock ticks (TSC-based, finer
  // than ns or not), whose gaps and durations take fewer bits. Converts every
  // start and end back to the ticks that give the same ns, if each has one
  // (a trace already in ns does not); the segment is then stored in ticks.
  bool times_to_ticks() {
    const uint64_t st = proc_->start_ticks, q = proc_->tick_q32, mono = proc_->start_mono_ns;
    std::vector<std::vector<std::pair<uint64_t, uint64_t>>> conv(threads_.size());
    for (size_t ti = 0; ti < threads_.size(); ++ti) {
      conv[ti].reserve(threads_[ti].events.size());
      for (const ff::EfgFields& e : threads_[ti].events) {
        uint64_t t0, t1;
        if (!ff::ns_to_ticks(e.ts, st, q, mono, t0) || !ff::ns_to_ticks(e.ts + e.dur, st, q, mono, t1)) return false;
        conv[ti].emplace_back(t0, t1 - t0);
      }
    }
    for (size_t ti = 0; ti < threads_.size(); ++ti) {
      Thread& t = threads_[ti];
      for (size_t i = 0; i < t.events.size(); ++i) std::tie(t.events[i].ts, t.events[i].dur) = conv[ti][i];
      if (!t.events.empty()) t.first_ts = t.events[0].ts;
    }
    return true;
  }

  struct Thread {
    uint32_t tid = 0;
    uint64_t first_ts = 0;
    std::vector<uint32_t> seq;
    std::vector<ff::EfgFields> events;
  };
  size_t thread_index(uint32_t tid) {
    for (size_t i = 0; i < threads_.size(); ++i)
      if (threads_[i].tid == tid) return i;
    threads_.push_back({});
    threads_.back().tid = tid;
    return threads_.size() - 1;
  }

  const reader::ProcessInfo* proc_;
  std::vector<Thread> threads_;
  std::unordered_map<uint64_t, uint32_t> nodes_;
  std::vector<uint32_t> node_names_;
  std::vector<std::pair<size_t, size_t>> blocks_;
  size_t events_ = 0;
};

// The input file's blocks other than events and footers, raw, in file order
// (process, dictionaries, stats, profile), up to where a reader stops.
std::vector<std::pair<ff::BlockHeader, std::vector<uint8_t>>> kept_blocks(const std::string& path) {
  std::vector<std::pair<ff::BlockHeader, std::vector<uint8_t>>> out;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  ff::FileHeader fh{};
  if (std::fread(&fh, 1, sizeof(fh), f) != sizeof(fh)) {
    std::fclose(f);
    throw std::runtime_error(path + ": file header cut short");
  }
  std::fseek(f, static_cast<long>(fh.header_size), SEEK_SET);
  for (;;) {
    ff::BlockHeader h{};
    if (std::fread(&h, 1, sizeof(h), f) != sizeof(h) || h.magic != ff::kBlockMagic) break;
    std::vector<uint8_t> payload(h.stored_size);
    if (std::fread(payload.data(), 1, payload.size(), f) != payload.size()) break;  // cut short: the reader stops too
    const auto type = static_cast<ff::BlockType>(h.type);
    if (type == ff::BlockType::kEvents || type == ff::BlockType::kEfg || type == ff::BlockType::kFooter) continue;
    out.emplace_back(h, std::move(payload));
  }
  std::fclose(f);
  return out;
}

class OutputFile {
 public:
  explicit OutputFile(const std::string& path) : path_(path) {
    fp_ = std::fopen(path.c_str(), "wb");
    if (!fp_) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
    ff::FileHeader h = ff::make_file_header();
    h.version_minor = ff::kVersionMinorEfg;
    put(&h, sizeof(h));
  }
  ~OutputFile() {
    if (fp_) std::fclose(fp_);
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void raw_block(const ff::BlockHeader& h, const std::vector<uint8_t>& payload) {
    index_.push_back({h.type, offset_, h.count});
    put(&h, sizeof(h));
    put(payload.data(), payload.size());
  }
  void framed(ff::BlockType type, uint32_t count, const uint8_t* data, size_t n) {
    index_.push_back({static_cast<uint8_t>(type), offset_, count});
    put(data, n);
  }
  void footer(uint64_t events, uint64_t dropped, ff::BlockFramer& framer) {
    ff::ByteSink payload;
    const uint64_t at = offset_;
    ff::encode_footer(payload, index_, events, dropped, at);
    if (!framer.frame(ff::BlockType::kFooter, 0, payload.bytes(), false)) throw std::runtime_error("framing failed");
    put(framer.data(), framer.size());
  }
  uint64_t close() {
    if (std::fclose(fp_) != 0) {
      fp_ = nullptr;
      throw std::runtime_error(path_ + ": write failed (disk full?)");
    }
    fp_ = nullptr;
    return offset_;
  }

 private:
  void put(const void* p, size_t n) {
    if (std::fwrite(p, 1, n, fp_) != n) throw std::runtime_error(path_ + ": write failed: " + std::strerror(errno));
    offset_ += n;
  }
  std::string path_;
  std::FILE* fp_ = nullptr;
  uint64_t offset_ = 0;
  std::vector<ff::IndexEntry> index_;
};

void compress_file(const std::string& in, const std::string& out, bool no_times, CompressResult& r) {
  reader::FileReader file(in);
  NodeClassifier classes(file.dict());
  ff::BlockFramer framer(19);
  ff::ByteSink payload;
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> efg_blocks;  // (events, framed bytes)
  Segment seg(file.process());
  auto flush = [&] {
    if (!seg.events()) return;
    seg.encode(no_times, payload, r.partitions);
    if (!framer.frame(ff::BlockType::kEfg, static_cast<uint32_t>(seg.events()), payload.bytes(), true)) {
      throw std::runtime_error(out + ": compression failed");
    }
    efg_blocks.emplace_back(static_cast<uint32_t>(seg.events()), std::vector<uint8_t>(framer.data(), framer.data() + framer.size()));
    r.nodes += seg.nodes();
    seg = Segment(file.process());
  };
  reader::EventBatch b;
  while (file.next(b)) {
    for (size_t from = 0; from < b.size_events();) {
      if (seg.events() == ff::kEfgMaxEvents) flush();
      const size_t n = std::min(b.size_events() - from, ff::kEfgMaxEvents - seg.events());
      seg.add(b, from, n, classes);
      from += n;
      r.events += n;
    }
  }
  flush();

  OutputFile o(out);
  for (const auto& [h, p] : kept_blocks(in)) o.raw_block(h, p);
  for (const auto& [events, bytes] : efg_blocks) o.framed(ff::BlockType::kEfg, events, bytes.data(), bytes.size());
  // A file the writer closed keeps its footer; one cut short (a killed
  // process) stays without, as analyze reports it.
  if (file.has_footer()) o.footer(file.stats().events_written, file.stats().events_dropped, framer);
  r.output_bytes += o.close();
  r.input_bytes += fs::file_size(in);
  r.efg_blocks += efg_blocks.size();
  ++r.files;
}

void prepare_output(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) throw std::runtime_error(dir + ": exists and is not a directory");
    if (!fs::is_empty(dir, ec)) throw std::runtime_error(dir + ": exists and is not empty (give a new directory)");
  } else if (!fs::create_directories(dir, ec) || ec) {
    throw std::runtime_error(dir + ": cannot create: " + ec.message());
  }
}

// A DFTracer trace (.pfw, .pfw.gz, or a directory of them): --compress keeps
// strata's fields, which DFTracer does not record.
bool is_dftracer_input(const std::string& path) {
  auto pfw = [](const fs::path& p) {
    const std::string s = p.filename().string();
    return s.ends_with(".pfw") || s.ends_with(".pfw.gz");
  };
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return pfw(path);
  for (const auto& e : fs::directory_iterator(path, ec))
    if (pfw(e.path())) return true;
  return false;
}

}  // namespace

CompressResult compress_trace(const CompressOptions& opts) {
  if (is_dftracer_input(opts.input)) {
    throw std::runtime_error(opts.input + ": a DFTracer trace; --compress rewrites strata traces (strata run's output)");
  }
  reader::TraceReader trace(opts.input);  // lists the files, skips those cut short before their process block
  prepare_output(opts.output);
  CompressResult r;
  for (const std::string& in : trace.files())
    compress_file(in, (fs::path(opts.output) / fs::path(in).filename()).string(), opts.no_times, r);
  return r;
}

void print_compress_summary(const CompressOptions& opts, const CompressResult& r, std::ostream& out) {
  auto ratio = [](uint64_t a, uint64_t b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0; };
  out << fmt::format(
      "strata efg: wrote {} ({} file{}, {} events{}): {} bytes against {} in the native trace: {:.2f}x smaller, "
      "{:.3f} bytes per event ({} EFG block{}, {} nodes, {} partitions)\n",
      opts.output, r.files, r.files == 1 ? "" : "s", r.events, opts.no_times ? ", times dropped" : "", r.output_bytes,
      r.input_bytes, ratio(r.input_bytes, r.output_bytes), ratio(r.output_bytes, r.events), r.efg_blocks,
      r.efg_blocks == 1 ? "" : "s", r.nodes, r.partitions);
}

}  // namespace strata::efg
