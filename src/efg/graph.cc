#include "efg/graph.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

#include "efg/bytes.h"

namespace strata::efg {

bool parse_file_class(const std::string& text, FileClass* out) {
  if (text == "dir" || text == "directory") *out = FileClass::kDirectory;
  else if (text == "path") *out = FileClass::kPath;
  else if (text == "any") *out = FileClass::kAny;
  else return false;
  return true;
}

int32_t size_class_of(int64_t size) {
  if (size < 0) return -1;
  if (size == 0) return 0;
  return static_cast<int32_t>(std::bit_width(static_cast<uint64_t>(size)));
}

namespace {
std::string bytes_text(uint64_t b) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024 && b % 1024 == 0 && u < 6) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + units[u];
}
}  // namespace

std::string size_class_label(int32_t sc) {
  if (sc < 0) return "";
  if (sc == 0) return "0B";
  if (sc >= 64) return ">=8EiB";
  const uint64_t lo = uint64_t{1} << (sc - 1);
  if (sc == 64) return bytes_text(lo) + "+";
  return bytes_text(lo) + "-" + bytes_text(lo * 2);
}

std::string signature_label(const Signature& s) {
  std::string out = s.layer + " " + s.function;
  if (!s.file.empty()) out += " " + s.file;
  if (s.size_class >= 0) out += " [" + size_class_label(s.size_class) + ")";
  return out;
}

std::string directory_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

void Stat::add(int64_t v) {
  if (count == 0 || v < min) min = v;
  if (count == 0 || v > max) max = v;
  sum += v;
  ++count;
}

void Stat::merge(const Stat& o) {
  if (o.count == 0) return;
  if (count == 0 || o.min < min) min = o.min;
  if (count == 0 || o.max > max) max = o.max;
  sum += o.sum;
  count += o.count;
}

Graph::Graph() {
  nodes.push_back(Node{Signature{"", "start", "", -1}, {}});
}

uint32_t Graph::intern(const Signature& sig) {
  auto [it, fresh] = index_.try_emplace(sig, static_cast<uint32_t>(nodes.size()));
  if (fresh) nodes.push_back(Node{sig, {}});
  return it->second;
}

void Graph::merge(const Graph& o) {
  std::vector<uint32_t> remap(o.nodes.size(), kStartNode);
  for (size_t i = 1; i < o.nodes.size(); ++i) {
    remap[i] = intern(o.nodes[i].sig);
    nodes[remap[i]].duration.merge(o.nodes[i].duration);
  }
  for (const auto& [key, e] : o.edges) {
    Edge& mine = edges[{remap[key.first], remap[key.second]}];
    mine.count += e.count;
    mine.gap.merge(e.gap);
    mine.duration.merge(e.duration);
  }
  events += o.events;
  threads += o.threads;
  span_ns += o.span_ns;
}

bool Graph::same_structure(const Graph& o) const {
  if (nodes.size() != o.nodes.size() || edges.size() != o.edges.size()) return false;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!(nodes[i].sig == o.nodes[i].sig)) return false;
  auto a = edges.begin();
  for (auto b = o.edges.begin(); b != o.edges.end(); ++a, ++b)
    if (a->first != b->first || a->second.count != b->second.count) return false;
  return true;
}

std::vector<std::vector<std::pair<uint32_t, uint64_t>>> Graph::successors() const {
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> succ(nodes.size());
  for (const auto& [key, e] : edges) succ[key.first].emplace_back(key.second, e.count);
  return succ;
}

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
