// EFG blocks (format 1.3, docs/trace-format.md §19): a segment of a file's
// events stored as one temporal event flow graph per thread plus per-node
// columns (format/efg_block.h). Decoded whole into the batches of the
// EVENTS blocks it replaced, which next() then hands out one at a time.
#include <string>
#include <utility>
#include <vector>

#include "format/efg_block.h"
#include "format/format.h"
#include "format/temporal_order.h"
#include "format/varint.h"
#include "reader/columns.h"
#include "strata/reader.h"

namespace strata::reader {

namespace fmt = strata::format;

namespace {

// Reads varints from a payload; every overrun is reported through fail.
template <class Fail>
struct PayloadCursor {
  const uint8_t* p;
  const uint8_t* end;
  Fail fail;
  uint64_t varint(const char* what) {
    uint64_t v;
    p = fmt::get_varint(p, end, v);
    if (!p) fail(std::string("EFG block: payload ends inside ") + what);
    return v;
  }
  // A count of items each taking at least `least` bytes: bounded by what is left.
  uint64_t count(const char* what, uint64_t least = 1) {
    const uint64_t n = varint(what);
    if (n > static_cast<uint64_t>(end - p) / least) fail(std::string("EFG block: ") + what + " runs past the block");
    return n;
  }
  uint8_t byte(const char* what) {
    if (p == end) fail(std::string("EFG block: payload ends inside ") + what);
    return *p++;
  }
};

struct ThreadOrder {
  uint32_t tid = 0;
  uint64_t first_ts = 0;
  std::vector<uint32_t> seq;  // node ids, 1-based
  uint64_t taken = 0;         // events already handed to batches
};

}  // namespace

void FileReader::decode_efg(const std::vector<uint8_t>& payload, uint32_t count) {
  auto fail_here = [this](const std::string& what) { fail(what); };
  PayloadCursor<decltype(fail_here)> c{payload.data(), payload.data() + payload.size(), fail_here};
  if (count > kMaxBlockEvents) {
    fail("EFG block: header claims " + std::to_string(count) + " events, more than the reader's limit of " +
         std::to_string(kMaxBlockEvents) + " per block (corrupt block)");
  }
  const uint64_t flags = c.varint("flags");
  const bool times = !(flags & fmt::kEfgNoTimes);
  const bool ticks = times && (flags & fmt::kEfgTicks);
  const int ncols = times ? fmt::kEfgColumns : fmt::kEfgColumnsNoTimes;

  const uint64_t num_nodes = c.count("node table");
  std::vector<uint32_t> node_name(num_nodes + 1, 0);
  for (uint64_t k = 1; k <= num_nodes; ++k) {
    const uint64_t nid = c.varint("node table");
    if (nid > UINT32_MAX || !dict_.has_name(static_cast<uint32_t>(nid))) {
      fail("EFG block: node " + std::to_string(k) + " uses name id " + std::to_string(nid) +
           ", not defined by an earlier DICT block (corrupt block)");
    }
    node_name[k] = static_cast<uint32_t>(nid);
  }

  const uint64_t num_threads = c.count("thread table", 3);
  std::vector<ThreadOrder> threads(num_threads);
  std::vector<uint64_t> node_events(num_nodes + 1, 0);
  uint64_t total = 0;
  for (ThreadOrder& t : threads) {
    t.tid = static_cast<uint32_t>(c.varint("thread table"));
    fmt::TemporalOrder order;
    order.length = c.varint("thread table");
    t.first_ts = c.varint("thread table");
    order.first_node = static_cast<uint32_t>(c.varint("thread table"));
    total += order.length;
    if (order.length > count || total > count) fail("EFG block: threads hold more events than the block's " + std::to_string(count));
    order.partitions.resize(num_nodes + 1);
    for (uint64_t k = 1; k <= num_nodes; ++k) {
      const uint64_t np = c.count("partitions", 5);
      order.partitions[k].resize(np);
      for (fmt::Partition& part : order.partitions[k]) {
        part.to = static_cast<uint32_t>(c.varint("partitions"));
        part.first = c.varint("partitions");
        part.last = part.first + c.varint("partitions");
        part.stride = c.varint("partitions");
        part.block = c.varint("partitions");
        if (part.to == 0 || part.to > num_nodes) fail("EFG block: a partition leads to node " + std::to_string(part.to) + ", not in the node table");
      }
    }
    if (order.length && (order.first_node == 0 || order.first_node > num_nodes)) fail("EFG block: a thread starts at a node not in the node table");
    try {
      t.seq = fmt::decode_order(order);
    } catch (const std::runtime_error& e) {
      fail(std::string("EFG block: thread ") + std::to_string(t.tid) + ": " + e.what());
    }
    for (uint32_t node : t.seq) ++node_events[node];
  }
  if (total != count) fail("EFG block: threads hold " + std::to_string(total) + " events, the header " + std::to_string(count));

  // The EVENTS blocks this one replaced: (thread, events) in file order.
  const uint64_t num_blocks = c.count("block list", 2);
  std::vector<std::pair<uint64_t, uint64_t>> blocks(num_blocks);
  {
    std::vector<uint64_t> per_thread(num_threads, 0);
    for (auto& [t, n] : blocks) {
      t = c.varint("block list");
      n = c.varint("block list");
      if (t >= num_threads || n == 0 || n > threads[t].seq.size() - per_thread[t]) fail("EFG block: the block list does not match the threads' events");
      per_thread[t] += n;
    }
    for (uint64_t t = 0; t < num_threads; ++t)
      if (per_thread[t] != threads[t].seq.size()) fail("EFG block: the block list does not cover thread " + std::to_string(threads[t].tid));
  }

  // Per node, its columns: the values of its events in thread order.
  std::vector<std::vector<uint64_t>> values(num_nodes + 1);
  for (uint64_t k = 1; k <= num_nodes; ++k) {
    values[k].resize(node_events[k] * ncols);
    std::vector<uint64_t> col(node_events[k]);
    for (int ci = 0; ci < ncols; ++ci) {
      const uint8_t enc = c.byte("columns");
      const uint64_t len = c.count("columns");
      size_t frame = 0;
      const char* bad = columns::decode_any(enc, c.p, c.p + len, col.size(), col.data(), [](uint64_t v) { return v; }, frame);
      if (bad) fail("EFG block: node " + std::to_string(k) + ", column " + std::to_string(ci) + ": " + bad);
      c.p += len;
      for (size_t i = 0; i < col.size(); ++i) values[k][i * ncols + ci] = col[i];
    }
  }
  if (c.p != c.end) fail("EFG block: bytes left after the last column");

  // Each thread's events, walked in order through its coder.
  std::vector<EventBatch> decoded(num_threads);
  std::vector<uint64_t> cursor(num_nodes + 1, 0);
  for (uint64_t ti = 0; ti < num_threads; ++ti) {
    const ThreadOrder& t = threads[ti];
    EventBatch& b = decoded[ti];
    b.tid = t.tid;
    b.resize(t.seq.size());
    fmt::EfgThreadCoder coder(t.first_ts);
    for (size_t i = 0; i < t.seq.size(); ++i) {
      const uint32_t node = t.seq[i];
      const fmt::EfgFields e = coder.decode(&values[node][cursor[node]++ * ncols], times, i, t.first_ts);
      if (!dict_.has_string(e.path) || !dict_.has_context(e.ctx)) {
        fail("EFG block: event " + std::to_string(i) + " of thread " + std::to_string(t.tid) +
             " uses a string or context id not defined by an earlier DICT block (corrupt block)");
      }
      if (e.mem_align > 1 + fmt::kMemAlignMaxLog2) fail("EFG block: a memory alignment value over " + std::to_string(1 + fmt::kMemAlignMaxLog2));
      b.name[i] = node_name[node];
      b.path[i] = e.path;
      b.ctx[i] = e.ctx;
      b.fd[i] = e.fd;
      b.err[i] = e.err;
      if (ticks) {  // as decode_events converts: start and end, each to ns
        b.ts[i] = process_.ticks_to_ns(e.ts);
        b.dur[i] = process_.ticks_to_ns(e.ts + e.dur) - b.ts[i];
      } else {
        b.ts[i] = e.ts;
        b.dur[i] = e.dur;
      }
      b.offset[i] = e.offset;
      b.size[i] = e.size;
      b.ret[i] = e.ret;
      b.mem_align[i] = e.mem_align;
    }
  }

  efg_batches_.clear();
  efg_next_ = 0;
  std::vector<uint64_t> taken(num_threads, 0);
  for (const auto& block : blocks) {
    const uint64_t ti = block.first, n = block.second;  // (clang 14 cannot capture bindings)
    const EventBatch& src = decoded[ti];
    EventBatch& out = efg_batches_.emplace_back();
    out.tid = src.tid;
    const uint64_t from = taken[ti];
    taken[ti] += n;
    auto slice = [&](auto& dst, const auto& s) { dst.assign(s.begin() + from, s.begin() + from + n); };
    slice(out.name, src.name);
    slice(out.path, src.path);
    slice(out.ctx, src.ctx);
    slice(out.fd, src.fd);
    slice(out.err, src.err);
    slice(out.ts, src.ts);
    slice(out.dur, src.dur);
    slice(out.offset, src.offset);
    slice(out.size, src.size);
    slice(out.ret, src.ret);
    slice(out.mem_align, src.mem_align);
  }
}

bool FileReader::next_efg_batch(EventBatch& out) {
  if (efg_next_ >= efg_batches_.size()) return false;
  out = std::move(efg_batches_[efg_next_++]);
  if (efg_next_ == efg_batches_.size()) efg_batches_.clear();
  return true;
}

}  // namespace strata::reader
