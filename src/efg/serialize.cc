// Builder state <-> bytes (the pass engine ships per-unit states between
// workers). Layout: "EFG2", options, then per process its metadata and graph;
// every integer a varint (docs/efg.md).
#include <limits>

#include "efg/bytes.h"
#include "efg/builder.h"

namespace strata::efg {

namespace {

constexpr std::string_view kMagic = "EFG2";

void put_stat(ByteWriter& w, const Stat& s) {
  w.u(s.count);
  w.s(s.sum);
  w.s(s.min);
  w.s(s.max);
}

Stat get_stat(ByteReader& r) {
  Stat s;
  s.count = r.u();
  s.sum = r.s();
  s.min = r.s();
  s.max = r.s();
  return s;
}

void put_meta(ByteWriter& w, const analysis::ProcessMeta& m) {
  w.s(m.pid);
  w.s(m.ppid);
  w.s(m.rank);
  w.str(m.host);
  w.str(m.exe);
  w.str(m.cmdline);
  w.s(m.start_ns);
  w.str(m.source_file);
}

analysis::ProcessMeta get_meta(ByteReader& r) {
  analysis::ProcessMeta m;
  m.pid = r.s();
  m.ppid = r.s();
  m.rank = r.s();
  m.host = r.str();
  m.exe = r.str();
  m.cmdline = r.str();
  m.start_ns = r.s();
  m.source_file = r.str();
  return m;
}

void put_graph(ByteWriter& w, const Graph& g) {
  w.u(g.events);
  w.u(g.threads);
  w.s(g.span_ns);
  w.u(g.nodes.size() - 1);
  for (size_t i = 1; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    w.str(n.sig.layer);
    w.str(n.sig.function);
    w.str(n.sig.file);
    w.s(n.sig.size_class);
    w.str(n.sig.role);
    put_stat(w, n.duration);
    w.s(n.busy_ns);
  }
  w.u(g.edges.size());
  for (const auto& [key, e] : g.edges) {
    w.u(key.first);
    w.u(key.second);
    w.u(e.count);
    put_stat(w, e.gap);
    put_stat(w, e.duration);
  }
  w.u(g.arrivals.size());
  for (const ArrivalLog& log : g.arrivals) {
    w.u(log.runs.size());
    for (const ArrivalRun& run : log.runs) {
      w.u(run.node);
      w.u(run.from);
      w.u(run.count);
    }
  }
}

Graph get_graph(ByteReader& r) {
  Graph g;
  g.events = r.u();
  g.threads = r.u();
  g.span_ns = r.s();
  const uint64_t n = r.count(8);
  for (uint64_t i = 0; i < n; ++i) {
    Signature sig;
    sig.layer = r.str();
    sig.function = r.str();
    sig.file = r.str();
    const int64_t sc = r.s();
    if (sc < -1 || sc > 64) r.fail("bad size class");
    sig.size_class = static_cast<int32_t>(sc);
    sig.role = r.str();
    const uint32_t id = g.intern(sig);
    if (id != i + 1) r.fail("duplicate node signature");
    g.nodes[id].duration = get_stat(r);
    g.nodes[id].busy_ns = r.s();
  }
  const uint64_t m = r.count(11);
  for (uint64_t i = 0; i < m; ++i) {
    const uint64_t from = r.u(), to = r.u();
    if (from >= g.nodes.size() || to >= g.nodes.size() || to == kStartNode) r.fail("edge to an unknown node");
    Edge e;
    e.count = r.u();
    e.gap = get_stat(r);
    e.duration = get_stat(r);
    g.edges[{static_cast<uint32_t>(from), static_cast<uint32_t>(to)}] = e;
  }
  const uint64_t logs = r.count(2);
  for (uint64_t i = 0; i < logs; ++i) {
    ArrivalLog log;
    const uint64_t runs = r.count(3);
    if (g.arrival_runs + runs > kMaxArrivalRuns) r.fail("more arrival runs than a graph keeps");
    for (uint64_t k = 0; k < runs; ++k) {
      const uint64_t node = r.u(), from = r.u(), count = r.u();
      if (node == kStartNode || node >= g.nodes.size()) r.fail("arrival at an unknown node");
      if (from >= g.nodes.size()) r.fail("arrival from an unknown node");
      if (count == 0 || count > UINT32_MAX) r.fail("bad arrival run length");
      log.runs.push_back({static_cast<uint32_t>(node), static_cast<uint32_t>(from), static_cast<uint32_t>(count)});
    }
    g.arrival_runs += runs;
    g.arrivals.push_back(std::move(log));
  }
  return g;
}

}  // namespace

std::string Builder::to_bytes() const {
  ByteWriter w;
  w.raw(kMagic);
  w.u(static_cast<uint64_t>(opts_.file_class));
  w.u(opts_.size_classes ? 1 : 0);
  w.u(metas_.size());
  for (const auto& [pid, m] : metas_) put_meta(w, m);
  w.u(processes_.size());
  for (const auto& [pid, g] : processes_) {
    w.s(pid);
    put_graph(w, g);
  }
  return w.take();
}

Builder Builder::from_bytes(const std::string& bytes) {
  ByteReader r(bytes);
  r.expect(kMagic);
  BuilderOptions opts;
  const uint64_t fc = r.u();
  if (fc > static_cast<uint64_t>(FileClass::kAny)) r.fail("bad file class");
  opts.file_class = static_cast<FileClass>(fc);
  opts.size_classes = r.u() != 0;
  Builder b(opts);
  const uint64_t metas = r.count(8);
  for (uint64_t i = 0; i < metas; ++i) {
    analysis::ProcessMeta m = get_meta(r);
    b.metas_[m.pid] = m;
  }
  const uint64_t procs = r.count(8);
  for (uint64_t i = 0; i < procs; ++i) {
    const int64_t pid = r.s();
    b.processes_[pid] = get_graph(r);
  }
  if (!r.done()) r.fail("trailing bytes");
  return b;
}

}  // namespace strata::efg
