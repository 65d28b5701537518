#include "efg/builder.h"

#include <algorithm>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace strata::efg {

size_t Builder::NodeKeyHash::operator()(const NodeKey& k) const {
  uint64_t h = static_cast<uint64_t>(k.pid) * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t{k.func} << 32 | k.path) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(static_cast<uint32_t>(k.size_class)) * 0xC2B2AE3D27D4EB4Full;
  h ^= static_cast<uint64_t>(k.role + 1) * 0x165667B19E3779F9ull;
  return static_cast<size_t>(h ^ (h >> 29));
}

void Builder::begin(const std::string&, const analysis::Tables* tables, bool) {
  tables_ = tables;
  node_cache_.clear();
  role_cache_.clear();
  class_of_path_ = {};
  class_ids_.clear();
  class_names_.clear();
  threads_.clear();
  last_thread_ = {};
}

namespace {
constexpr int64_t kUnknownRole = -2;
}  // namespace

// The Python layer tags every event of a DataLoader pass with the loader's
// index (0 the first loader iterated, usually training): the role of the
// event. Training and validation steps then are different nodes, and so are
// the checkpoint's calls and the same calls at start-up. Other tags (epoch,
// step, sample) change every iteration and would unroll the loops.
inline int64_t Builder::role_of(uint32_t ctx) {
  // Looked up already (role_cache_ never outgrows tables_->ctxs; slot 0 stays unknown).
  if (ctx < role_cache_.size() && role_cache_[ctx] != kUnknownRole) [[likely]] return role_cache_[ctx];
  return role_of_slow(ctx);
}

int64_t Builder::role_of_slow(uint32_t ctx) {
  if (ctx == 0 || !tables_ || ctx >= tables_->ctxs.size()) return -1;
  if (role_cache_.size() <= ctx) role_cache_.resize(tables_->ctxs.size(), kUnknownRole);
  int64_t& role = role_cache_[ctx];
  if (role == kUnknownRole) {
    role = -1;
    for (const analysis::CtxTag& tag : tables_->ctxs[ctx])
      if (tag.key == std::string_view("loader") && tag.is_int && tag.int_value >= 0) role = tag.int_value;
  }
  return role;
}

void Builder::process(const analysis::ProcessMeta& meta) {
  auto [it, fresh] = metas_.try_emplace(meta.pid, meta);
  if (!fresh && it->second.exe.empty()) it->second = meta;
  processes_[meta.pid];
}

size_t Builder::DirHash::operator()(std::string_view s) const { return XXH3_64bits(s.data(), s.size()); }

// The file part of a node's key: the path id itself (FileClass::kPath), or
// 1 + the index of the path's directory among this unit's directories, so
// that a job touching millions of paths in a few directories keeps a few
// cache entries (0: no file, or FileClass::kAny).
// (file_class_of(): a path seen before, in class_of_path_; kPath and kAny
// never fill it.)
uint32_t Builder::file_class_of_slow(uint32_t path) {
  if (path == 0 || opts_.file_class == FileClass::kAny) return 0;
  if (opts_.file_class == FileClass::kPath || !tables_ || !tables_->str) return path;
  // Doubled: a trace naming a new path per event (ids in turn) would
  // otherwise resize it once per event.
  if (path >= class_of_path_.size()) class_of_path_.resize(std::max<size_t>(path + 1, 2 * class_of_path_.size()), 0);
  uint32_t& cls = class_of_path_[path];
  if (cls == 0) {
    // directory_of(), without a string per path.
    const std::string_view p = tables_->str(path);
    const size_t slash = p.rfind('/');
    const std::string_view dir = slash == std::string_view::npos ? std::string_view(".")
                                 : slash == 0                    ? std::string_view("/")
                                                                 : p.substr(0, slash);
    auto it = class_ids_.find(dir);
    if (it == class_ids_.end()) {
      it = class_ids_.emplace(std::string(dir), static_cast<uint32_t>(class_names_.size() + 1)).first;
      class_names_.push_back(it->first);
    }
    cls = it->second;
  }
  return cls;
}

[[gnu::always_inline]] inline uint32_t Builder::node_of(Graph& g, ThreadCursor& t, const analysis::IoEvent& e) {
  // Only reads and writes have a request size; open's "size" column is its mode.
  const bool data = tables_ && e.func < tables_->funcs.size() && tables_->funcs[e.func].data;
  const int32_t sc = opts_.size_classes && data ? size_class_of(e.size) : -1;
  // A loop repeats one call on one file: most events are the thread's previous node.
  LastNode& last = t.last_node;
  const bool same_call = last.node != kNoNode && last.func == e.func && last.path == e.path && last.size_class == sc;
  if (same_call && last.ctx == e.ctx) return last.node;
  const int64_t role = role_of(e.ctx);
  if (same_call && role == last.role) {
    last.ctx = e.ctx;
    return last.node;
  }
  // Else the thread's last node of this function, if the rest of the key matches.
  const uint32_t file_class = file_class_of(e.path);
  if (e.func < t.by_func.size()) [[likely]] {
    const FuncNode& same_func = t.by_func[e.func];
    if (same_func.node != kNoNode && same_func.file_class == file_class && same_func.size_class == sc &&
        same_func.role == role) {
      last = {e.func, e.path, e.ctx, sc, role, same_func.node};
      return same_func.node;
    }
  }
  return node_of_slow(g, t, e, NodeKey{e.pid, e.func, file_class, sc, role});
}

uint32_t Builder::node_of_slow(Graph& g, ThreadCursor& t, const analysis::IoEvent& e, const NodeKey& key) {
  const int32_t sc = key.size_class;
  const int64_t role = key.role;
  if (e.func >= t.by_func.size()) t.by_func.resize(std::max<size_t>(e.func + 1, tables_ ? tables_->funcs.size() : 0));
  FuncNode& same_func = t.by_func[e.func];
  auto hit = node_cache_.find(key);
  const uint32_t id = hit != node_cache_.end() ? hit->second : new_node(g, e, key);
  same_func = {key.path, sc, role, id};
  t.last_node = {e.func, e.path, e.ctx, sc, role, id};
  return id;
}

uint32_t Builder::new_node(Graph& g, const analysis::IoEvent& e, const NodeKey& key) {
  const int32_t sc = key.size_class;
  Signature sig;
  if (tables_ && e.func < tables_->funcs.size()) {
    const analysis::FuncInfo& f = tables_->funcs[e.func];
    sig.layer = analysis::layer_name(f.layer);
    sig.function = f.name;
  } else {
    sig.layer = "?";
    sig.function = std::to_string(e.func).insert(0, 1, '#');  // not "#" + ...: GCC 12's -O3 -Wrestrict false alarm
  }
  if (key.path != 0 && tables_ && tables_->str)
    sig.file = opts_.file_class == FileClass::kPath ? std::string(tables_->str(key.path)) : class_names_[key.path - 1];
  sig.size_class = sc;
  if (key.role >= 0) sig.role = std::string("loader=").append(std::to_string(key.role));
  const uint32_t id = g.intern(sig);
  node_cache_.emplace(key, id);
  return id;
}

inline Edge& Builder::next_edge(Graph& g, ThreadCursor& t, uint32_t node) {
  if (t.next_edge.size() <= t.last) t.next_edge.resize(g.nodes.size());
  NextEdges& n = t.next_edge[t.last];
  if (n.node[0] == node) [[likely]] return *n.edge[0];
  if (n.node[1] == node) {
    std::swap(n.node[0], n.node[1]);
    std::swap(n.edge[0], n.edge[1]);
  } else {
    n.node[1] = n.node[0];
    n.edge[1] = n.edge[0];
    n.node[0] = node;
    n.edge[0] = &g.edges[{t.last, node}];
  }
  return *n.edge[0];
}

[[gnu::always_inline]] inline void Builder::log_arrival(Graph& g, ThreadCursor& t, uint32_t node) {
  if (t.arrivals_dropped) return;
  if (node < t.last_run.size()) [[likely]] {
    const uint32_t last = t.last_run[node];
    if (last != 0) {
      ArrivalRun& run = t.runs[last - 1];
      if (run.from == t.last && run.count != UINT32_MAX) {
        ++run.count;
        return;
      }
    }
  }
  log_arrival_slow(g, t, node);
}

void Builder::log_arrival_slow(Graph& g, ThreadCursor& t, uint32_t node) {
  if (t.last_run.size() <= node) t.last_run.resize(g.nodes.size(), 0);
  uint32_t& last = t.last_run[node];
  if (last != 0) {
    ArrivalRun& run = t.runs[last - 1];
    if (run.from == t.last && run.count != UINT32_MAX) {
      ++run.count;
      return;
    }
  }
  if (g.arrival_runs >= kMaxArrivalRuns) {  // drop this thread's log whole
    g.arrival_runs -= t.runs.size();
    t.runs = {};
    t.last_run = {};
    t.arrivals_dropped = true;
    return;
  }
  t.runs.push_back({node, t.last, 1});
  last = static_cast<uint32_t>(t.runs.size());
  ++g.arrival_runs;
}

void Builder::event(const analysis::IoEvent& e) { on_event(e); }

// The batch's loop inlines the event's work: no call per event.
void Builder::events(std::span<const analysis::IoEvent> batch) {
  for (const analysis::IoEvent& e : batch) on_event(e);
}

[[gnu::always_inline]] inline void Builder::on_event(const analysis::IoEvent& e) {
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
  const uint32_t node = node_of(g, t, e);
  Edge& edge = next_edge(g, t, node);
  log_arrival(g, t, node);
  ++edge.count;
  // Gaps from the start node are the thread's first event time: meaningless.
  if (t.last != kStartNode) edge.gap.add(std::max<int64_t>(0, e.ts - t.last_end));
  edge.duration.add(e.dur);
  g.nodes[node].duration.add(e.dur);
  // Busy time: the part of the event after everything before it in this
  // thread, so the thread's busy time plus its gaps is exactly its span.
  const int64_t end = e.ts + e.dur;
  const int64_t busy_from = t.last == kStartNode ? e.ts : std::max(e.ts, t.last_end);
  g.nodes[node].busy_ns += std::max<int64_t>(0, end - busy_from);
  ++g.events;
  t.last = node;
  t.last_end = std::max(t.last_end, end);
}

void Builder::close_threads() {
  last_thread_ = {};
  for (auto& [ids, t] : threads_) {
    Graph& g = processes_[ids.first];
    g.span_ns += std::max<int64_t>(0, t.last_end - t.first_start);
    if (!t.runs.empty()) g.arrivals.push_back({std::move(t.runs)});
  }
  threads_.clear();
}

void Builder::end() {
  close_threads();
  node_cache_.clear();
  role_cache_.clear();
  class_of_path_ = {};
  class_ids_.clear();
  class_names_.clear();
  tables_ = nullptr;
}

void Builder::merge(const Builder& o) {
  for (const auto& [pid, g] : o.processes_) processes_[pid].merge(g);
  for (const auto& [pid, m] : o.metas_) metas_.try_emplace(pid, m);
}

}  // namespace strata::efg
