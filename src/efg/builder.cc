#include "efg/builder.h"

#include <algorithm>

namespace strata::efg {

size_t Builder::NodeKeyHash::operator()(const NodeKey& k) const {
  uint64_t h = static_cast<uint64_t>(k.pid) * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t{k.func} << 32 | k.path) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(static_cast<uint32_t>(k.size_class)) * 0xC2B2AE3D27D4EB4Full;
  return static_cast<size_t>(h ^ (h >> 29));
}

void Builder::begin(const std::string&, const analysis::Tables* tables, bool) {
  tables_ = tables;
  node_cache_.clear();
  threads_.clear();
  last_thread_ = {};
}

void Builder::process(const analysis::ProcessMeta& meta) {
  auto [it, fresh] = metas_.try_emplace(meta.pid, meta);
  if (!fresh && it->second.exe.empty()) it->second = meta;
  processes_[meta.pid];
}

uint32_t Builder::node_of(Graph& g, const analysis::IoEvent& e) {
  // Only reads and writes have a request size; open's "size" column is its mode.
  const bool data = tables_ && e.func < tables_->funcs.size() && tables_->funcs[e.func].data;
  const int32_t sc = opts_.size_classes && data ? size_class_of(e.size) : -1;
  const NodeKey key{e.pid, e.func, opts_.file_class == FileClass::kAny ? 0u : e.path, sc};
  auto hit = node_cache_.find(key);
  if (hit != node_cache_.end()) return hit->second;
  Signature sig;
  if (tables_ && e.func < tables_->funcs.size()) {
    const analysis::FuncInfo& f = tables_->funcs[e.func];
    sig.layer = analysis::layer_name(f.layer);
    sig.function = f.name;
  } else {
    sig.layer = "?";
    sig.function = "#" + std::to_string(e.func);
  }
  if (key.path != 0 && tables_ && tables_->str) {
    const std::string_view path = tables_->str(key.path);
    sig.file = opts_.file_class == FileClass::kPath ? std::string(path) : directory_of(path);
  }
  sig.size_class = sc;
  const uint32_t id = g.intern(sig);
  node_cache_.emplace(key, id);
  return id;
}

void Builder::event(const analysis::IoEvent& e) {
  if (!last_thread_.cursor || last_thread_.pid != e.pid || last_thread_.tid != e.tid) {
    Graph& g = processes_[e.pid];
    auto [it, fresh] = threads_.try_emplace({e.pid, e.tid});
    if (fresh) {
      it->second.first_start = e.ts;
      ++g.threads;
    }
    last_thread_ = {e.pid, e.tid, &g, &it->second};
  }
  Graph& g = *last_thread_.graph;
  ThreadCursor& t = *last_thread_.cursor;
  const uint32_t node = node_of(g, e);
  if (t.next_edge.size() <= t.last) t.next_edge.resize(g.nodes.size(), {kStartNode, nullptr});
  auto& cached = t.next_edge[t.last];
  if (!cached.second || cached.first != node) cached = {node, &g.edges[{t.last, node}]};
  Edge& edge = *cached.second;
  ++edge.count;
  // Gaps from the start node are the thread's first event time: meaningless.
  if (t.last != kStartNode) edge.gap.add(std::max<int64_t>(0, e.ts - t.last_end));
  edge.duration.add(e.dur);
  g.nodes[node].duration.add(e.dur);
  ++g.events;
  t.last = node;
  t.last_end = std::max(t.last_end, e.ts + e.dur);
}

void Builder::close_threads() {
  last_thread_ = {};
  for (const auto& [ids, t] : threads_) processes_[ids.first].span_ns += std::max<int64_t>(0, t.last_end - t.first_start);
  threads_.clear();
}

void Builder::end() {
  close_threads();
  node_cache_.clear();
  tables_ = nullptr;
}

void Builder::merge(const Builder& o) {
  for (const auto& [pid, g] : o.processes_) processes_[pid].merge(g);
  for (const auto& [pid, m] : o.metas_) metas_.try_emplace(pid, m);
}

}  // namespace strata::efg
