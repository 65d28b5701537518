#include "runtime/smart.h"

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "efg/graph.h"
#include "efg/loops.h"
#include "runtime/state.h"

namespace strata::runtime {
namespace {

constexpr uint64_t kQuietMin = 64;  // events without growth before the first loop search

// A node's key: what efg::Builder distinguishes with its default options.
struct NodeKey {
  uint32_t name;
  uint32_t dir;  // 0: no file
  int32_t size_class;
  bool operator==(const NodeKey&) const = default;
};
struct NodeKeyHash {
  size_t operator()(const NodeKey& k) const {
    uint64_t h = (uint64_t{k.name} << 32 | k.dir) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(k.size_class)) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// Directory ids of path string ids, shared by all threads (dir 0: no path).
struct Directories {
  std::vector<uint32_t> of_sid;  // sid -> dir id, 0 not yet known
  std::map<std::string, uint32_t, std::less<>> ids;
  std::vector<std::string> names{""};

  uint32_t of(uint32_t sid) {
    if (sid == 0 || sid > g.strings.published()) return 0;
    if (sid >= of_sid.size()) of_sid.resize(sid + 1024, 0);
    uint32_t& d = of_sid[sid];
    if (d == 0) {
      const Interner::Entry& e = g.strings.get(sid);
      std::string dir = efg::directory_of(std::string_view(e.data, e.len));
      auto [it, fresh] = ids.try_emplace(std::move(dir), static_cast<uint32_t>(names.size()));
      if (fresh) names.push_back(it->first);
      d = it->second;
    }
    return d;
  }
};

enum class Phase : uint8_t { kWarmup, kLoop };

struct SmartThread {
  ThreadState* s = nullptr;
  efg::Graph graph;
  std::unordered_map<NodeKey, uint32_t, NodeKeyHash> node_of;
  std::vector<NodeKey> key_of{NodeKey{~0u, 0, -2}};  // by node id (the start node matches no event)
  // Per source node, the edge last taken from it: in a loop most nodes have
  // one successor, so most events skip the edge map.
  std::vector<std::pair<uint32_t, efg::Edge*>> next_edge;
  uint32_t last = efg::kStartNode;
  uint64_t events = 0, last_growth_at = 0, next_search_at = kQuietMin;
  Phase phase = Phase::kWarmup;
  uint32_t header = 0;
  uint32_t loop_id = 0;               // main loops found so far in this thread, minus one
  bool search_due = false;            // the graph grew in phase kLoop: look at the main loop again
  std::vector<uint8_t> inner_source;  // edge from this node into the header: an inner loop's back edge
  int64_t iteration = -1;             // index of the iteration in progress
  uint32_t full_left = 0;             // iterations still to write in full
  bool current_full = true;
  std::vector<RawEvent> pending;      // the iteration in progress (its `iteration` event first) while not kept
};

Directories* dirs = nullptr;
std::vector<SmartThread*>* threads = nullptr;

SmartThread& state_of(ThreadState* s) {
  if (!threads) threads = new std::vector<SmartThread*>();
  for (SmartThread* t : *threads)
    if (t->s == s) return *t;
  threads->push_back(new SmartThread());
  threads->back()->s = s;
  return *threads->back();
}

efg::Signature signature_of(const NodeKey& k) {
  efg::Signature sig;
  if (k.name < kNumFns) {
    sig.layer = layer_name(kFnInfo[k.name].layer);
    sig.function = kFnInfo[k.name].name;
  } else {
    sig.layer = "APP";
    sig.function = "#" + std::to_string(k.name);
  }
  sig.file = dirs->names[k.dir];
  sig.size_class = k.size_class;
  return sig;
}

// The node of e, created when new (sets grew). In a loop the node is mostly
// the one that followed the previous node last time: checked first, so most
// events skip the hash map.
uint32_t node_for(SmartThread& t, const RawEvent& e, bool& grew) {
  if (!dirs) dirs = new Directories();
  const bool data = e.name < kNumFns && kFnInfo[e.name].data;
  const NodeKey key{e.name, dirs->of(e.path), data ? efg::size_class_of(e.size) : -1};
  if (t.last < t.next_edge.size() && t.next_edge[t.last].second) {
    const uint32_t predicted = t.next_edge[t.last].first;
    if (t.key_of[predicted] == key) return predicted;
  }
  auto [it, fresh] = t.node_of.try_emplace(key, 0);
  if (!fresh) return it->second;
  // Another key of the same signature (another file of one directory is the
  // same key already; names are unique): a new node.
  it->second = static_cast<uint32_t>(t.graph.nodes.size());
  t.graph.nodes.push_back(efg::Node{signature_of(key), {}});
  t.key_of.resize(t.graph.nodes.size());
  t.key_of.back() = key;
  grew = true;
  return it->second;
}

efg::Edge& edge_for(SmartThread& t, uint32_t to, bool& grew) {
  if (t.next_edge.size() <= t.last) t.next_edge.resize(t.graph.nodes.size() + 16, {efg::kStartNode, nullptr});
  auto& cached = t.next_edge[t.last];
  if (cached.second && cached.first == to) return *cached.second;
  auto [it, fresh] = t.graph.edges.try_emplace({t.last, to});
  if (fresh) grew = true;
  cached = {to, &it->second};
  return it->second;
}

// The iteration in progress is kept whole, and the next N after it.
void keep_current(SmartThread& t, std::vector<RawEvent>& out) {
  if (!t.current_full) {
    t.pending.front().size = 1;
    out.insert(out.end(), t.pending.begin(), t.pending.end());
    t.pending.clear();
    t.current_full = true;
  }
  t.full_left = g.cfg.smart_iterations;
}

// After a quiet window: the main loop's header, and the nodes whose edges
// into it close an inner loop sharing that header rather than an iteration.
// Run again after the graph grows in phase kLoop: a loop found early may be
// the inner loop of one whose first trip had not ended yet; when the answer
// changes, the iterations of the new loop are marked with the next loop id.
void search_main_loop(SmartThread& t, std::vector<RawEvent>& out) {
  t.search_due = false;
  const efg::LoopForest f = efg::find_loops(t.graph);
  if (f.main_loop < 0) {
    t.next_search_at = t.events + std::max(kQuietMin, t.last_growth_at);
    t.search_due = t.phase == Phase::kLoop;
    return;
  }
  const uint32_t header = f.loops[f.main_loop].header;
  std::vector<uint8_t> inner(t.graph.nodes.size(), 0);
  for (int child : f.loops[f.main_loop].children)
    if (f.loops[child].header == header)
      for (uint32_t v = 0; v < t.graph.nodes.size(); ++v)
        if (f.contains(child, v)) inner[v] = 1;
  if (t.phase == Phase::kLoop) {
    t.inner_source.resize(inner.size(), 0);
    if (header == t.header && inner == t.inner_source) return;
    keep_current(t, out);
    ++t.loop_id;
  }
  uint64_t trips = 0;  // iterations so far: the next one's index
  for (const auto& [key, e] : t.graph.edges)
    if (key.second == header && !inner[key.first]) trips += e.count;
  t.header = header;
  t.inner_source = std::move(inner);
  t.phase = Phase::kLoop;
  t.iteration = static_cast<int64_t>(trips) - 1;
  t.full_left = g.cfg.smart_iterations;
  t.current_full = true;  // the rest of the iteration in progress
}

bool starts_iteration(const SmartThread& t, uint32_t node) {
  return node == t.header && !(t.last < t.inner_source.size() && t.inner_source[t.last]);
}

// Ends the iteration in progress: unless kept, only its `iteration` event.
void close_iteration(SmartThread& t, std::vector<RawEvent>& out) {
  if (!t.current_full && !t.pending.empty()) out.push_back(t.pending.front());
  t.pending.clear();
  t.current_full = true;
}

void open_iteration(SmartThread& t, const RawEvent& header_event, std::vector<RawEvent>& out) {
  ++t.iteration;
  t.current_full = t.full_left > 0;
  if (t.current_full) --t.full_left;
  // The index goes in the offset column: consecutive indices are a constant
  // stride there, coded in no bytes (docs/trace-format.md §8.4).
  const RawEvent it = make_event(static_cast<uint32_t>(Fn::iteration), header_event.start, header_event.start, -1, 0,
                                 t.iteration, t.current_full ? 1 : 0, t.loop_id, 0, header_event.ctx);
  if (t.current_full) out.push_back(it);
  else t.pending.assign(1, it);
}

void append(SmartThread& t, const RawEvent& e, std::vector<RawEvent>& out) {
  if (t.current_full) {
    out.push_back(e);
    return;
  }
  t.pending.push_back(e);
  if (t.pending.size() >= kSmartPendingMax) {
    // Past the bound: this iteration is written in full (without resetting
    // the count of iterations to keep: nothing new was seen).
    const uint32_t left = t.full_left;
    keep_current(t, out);
    t.full_left = left;
  }
}

void step(SmartThread& t, const RawEvent& e, std::vector<RawEvent>& out) {
  bool grew = false;
  const uint32_t node = node_for(t, e, grew);
  efg::Edge& edge = edge_for(t, node, grew);
  ++edge.count;
  t.graph.nodes[node].duration.add(static_cast<int64_t>(e.end - e.start));
  ++t.events;
  if (grew) t.last_growth_at = t.events;
  if (grew) t.next_search_at = t.events + std::max(kQuietMin, t.last_growth_at);
  if (t.phase == Phase::kWarmup) {
    out.push_back(e);
    t.last = node;
    if (!grew && t.events >= t.next_search_at) search_main_loop(t, out);
    return;
  }
  if (starts_iteration(t, node)) {
    if (grew) keep_current(t, out);  // the edge closing an iteration is part of it
    close_iteration(t, out);
    open_iteration(t, e, out);
    append(t, e, out);
  } else {
    append(t, e, out);
    if (grew) keep_current(t, out);
  }
  t.last = node;
  if (grew) t.search_due = true;
  else if (t.search_due && t.events >= t.next_search_at) search_main_loop(t, out);
}

}  // namespace

void smart_filter(ThreadState* s, const RingView& v, uint64_t tail, uint64_t n, std::vector<RawEvent>& out) {
  SmartThread& t = state_of(s);
  for (uint64_t i = 0; i < n; ++i) step(t, v.at(tail + i), out);
}

void smart_finish(ThreadState* s, std::vector<RawEvent>& out) {
  if (!threads) return;
  for (size_t i = 0; i < threads->size(); ++i) {
    SmartThread* t = (*threads)[i];
    if (t->s != s) continue;
    close_iteration(*t, out);
    delete t;
    (*threads)[i] = threads->back();
    threads->pop_back();
    return;
  }
}

void smart_forget_in_child() {
  if (!threads) return;
  for (SmartThread* t : *threads) delete t;
  threads->clear();
}

std::vector<ThreadState*> smart_threads() {
  std::vector<ThreadState*> out;
  if (threads)
    for (SmartThread* t : *threads) out.push_back(t->s);
  return out;
}

}  // namespace strata::runtime
