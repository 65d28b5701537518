#include "runtime/profile.h"

#include <cstring>

#include "analysis/counters.h"
#include "runtime/state.h"

namespace strata::runtime {
namespace {

namespace c = strata::counters;

c::CounterEngine* engine = nullptr;

// Adding a layer to STRATA_LAYERS (functions.h) needs its switch here too.
static_assert(sizeof(g_hot.layer_on) / sizeof(g_hot.layer_on[0]) == kNumLayers &&
                  sizeof(g_hot.record) / sizeof(g_hot.record[0]) == kNumLayers,
              "runtime.h's per-layer switches must have one entry per STRATA_LAYERS row");

}  // namespace

void profile_consume(const RawEvent& e) {
  if (e.name >= kNumFns) return;  // application events carry no file counters
  const FnInfo& m = kFnInfo[e.name];  // the one table (functions.h)
  if (m.op == c::Op::kNone) return;
  const LayerInfo& layer = kLayerInfo[static_cast<uint32_t>(m.layer)];
  if (!layer.counted) return;
  if (!engine) engine = new c::CounterEngine();
  c::CounterEvent ce;
  ce.module = layer.module;
  ce.op = m.op;
  ce.positional = m.positional;
  ce.ok = e.err == 0 && (m.layer == Layer::STDIO && m.data ? e.ret > 0 : e.ret >= 0);
  ce.fd = e.fd;
  if (m.op == c::Op::kDup) {
    ce.old_fd = e.fd;
    ce.fd = static_cast<int32_t>(e.ret);
  } else if (m.op == c::Op::kOpen || m.op == c::Op::kFdopen) {
    ce.fd = static_cast<int32_t>(e.ret);
    if (m.layer == Layer::POSIX && e.size > 0) ce.value = e.size;  // POSIX_MODE
  }
  ce.file = e.path ? e.path : c::kNoFile;
  if (m.op == c::Op::kRenameDst && e.offset > 0 && static_cast<uint64_t>(e.offset) <= g.strings.published()) {
    const Interner::Entry& src = g.strings.get(static_cast<uint32_t>(e.offset));  // the source path
    ce.value = static_cast<int64_t>(c::record_id(std::string(src.data, src.len)));
  }
  ce.offset = m.op == c::Op::kRenameDst ? -1 : m.op == c::Op::kSeek && m.layer == Layer::POSIX ? e.ret : e.offset;
  ce.bytes = m.data && e.ret > 0 ? e.ret : 0;
  ce.mem_align = static_cast<uint8_t>(e.mem_align);
  ce.t1 = static_cast<double>(ticks_to_ns(e.start)) * 1e-9;
  ce.t2 = static_cast<double>(ticks_to_ns(e.end)) * 1e-9;
  engine->on_event(ce);
}

// PROFILE payload: varint nrecords, then per record: u8 module (0 POSIX,
// 1 STDIO), varint path sid, varint ncounters, zigzag counters, varint
// nfcounters, f64 fcounters (little-endian IEEE 754). Counter order is the
// Darshan order of src/analysis/counters.h.
void profile_encode(format::ByteSink& out, uint32_t& records) {
  out.clear();
  records = 0;
  if (!engine) {
    out.put_varint(0);
    return;
  }
  engine->finalize();
  const auto& posix = engine->posix();
  const auto& stdio = engine->stdio();
  out.put_varint(posix.size() + stdio.size());
  auto put_doubles = [&](const double* v, size_t n) {
    out.put_varint(n);
    out.put_bytes(v, n * sizeof(double));
  };
  for (const auto& r : posix) {
    out.put_u8(0);
    out.put_varint(r.file == c::kNoFile ? 0 : r.file);
    out.put_varint(c::POSIX_NUM_INDICES);
    for (int64_t v : r.counters) out.put_zigzag(v);
    put_doubles(r.fcounters, c::POSIX_F_NUM_INDICES);
  }
  for (const auto& r : stdio) {
    out.put_u8(1);
    out.put_varint(r.file == c::kNoFile ? 0 : r.file);
    out.put_varint(c::STDIO_NUM_INDICES);
    for (int64_t v : r.counters) out.put_zigzag(v);
    put_doubles(r.fcounters, c::STDIO_F_NUM_INDICES);
  }
  records = static_cast<uint32_t>(posix.size() + stdio.size());
}

void profile_reset() {
  // The parent's counters are the parent's: the child starts from zero. The
  // old engine is left allocated (freeing memory another thread of the parent
  // allocated is fine, but this keeps the child handler minimal).
  engine = nullptr;
}

}  // namespace strata::runtime
