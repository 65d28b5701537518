#include "efg/loops.h"

#include <algorithm>
#include <cstdint>
#include <map>

namespace strata::efg {

namespace {

using Succ = std::vector<std::vector<std::pair<uint32_t, uint64_t>>>;

// The paper's per-node state. dfsp: position on the current DFS path (0 = not
// on it); iheader: innermost loop header found so far (-1 none).
struct WeiState {
  std::vector<uint8_t> traversed, is_header, irreducible;
  std::vector<uint32_t> dfsp;
  std::vector<int64_t> iheader;
  explicit WeiState(size_t n) : traversed(n), is_header(n), irreducible(n), dfsp(n), iheader(n, -1) {}

  // tag_lhead: weaves header h into b's header chain, keeping it ordered by
  // DFS path position (innermost first).
  void tag(int64_t b, int64_t h) {
    if (h < 0 || b == h) return;
    int64_t cur1 = b, cur2 = h;
    while (iheader[cur1] >= 0) {
      const int64_t ih = iheader[cur1];
      if (ih == cur2) return;
      if (dfsp[ih] < dfsp[cur2]) {
        iheader[cur1] = cur2;
        cur1 = cur2;
        cur2 = ih;
      } else {
        cur1 = ih;
      }
    }
    iheader[cur1] = cur2;
  }

  // An edge b0 -> b to an already traversed node.
  void visited_successor(uint32_t b0, uint32_t b) {
    if (dfsp[b] > 0) {  // b on the path: a back edge, b is a header
      is_header[b] = 1;
      tag(b0, b);
      return;
    }
    int64_t h = iheader[b];
    if (h < 0) return;  // b is in no loop
    if (dfsp[h] > 0) {
      tag(b0, h);
      return;
    }
    // Re-entry into h's loop at b, not through h: irreducible.
    irreducible[h] = 1;
    while (iheader[h] >= 0) {
      h = iheader[h];
      if (dfsp[h] > 0) {
        tag(b0, h);
        return;
      }
      irreducible[h] = 1;
    }
  }

  void run(const Succ& succ, uint32_t root) {
    struct Frame {
      uint32_t node;
      size_t next = 0;
    };
    std::vector<Frame> stack;
    traversed[root] = 1;
    dfsp[root] = 1;
    stack.push_back({root});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < succ[f.node].size()) {
        const uint32_t b = succ[f.node][f.next++].first;
        if (!traversed[b]) {
          traversed[b] = 1;
          dfsp[b] = dfsp[f.node] + 1;
          stack.push_back({b});
        } else {
          visited_successor(f.node, b);
        }
        continue;
      }
      const uint32_t done = f.node;
      dfsp[done] = 0;
      stack.pop_back();
      if (!stack.empty()) tag(stack.back().node, iheader[done]);
    }
  }
};

// Pre/post numbering of the loop tree, iteratively.
void number_loops(LoopForest& f) {
  f.tin.assign(f.loops.size(), 0);
  f.tout.assign(f.loops.size(), 0);
  uint32_t clock = 0;
  std::vector<std::pair<int, size_t>> stack;
  for (int r : f.roots) {
    stack.push_back({r, 0});
    f.tin[r] = clock++;
    while (!stack.empty()) {
      auto& [l, i] = stack.back();
      if (i < f.loops[l].children.size()) {
        const int c = f.loops[l].children[i++];
        f.tin[c] = clock++;
        stack.push_back({c, 0});
      } else {
        f.tout[l] = clock++;
        stack.pop_back();
      }
    }
  }
}

// Splits loop l when its back edges close strictly nested cycles through the
// same header: each latch's cycle (nodes reaching it without passing the
// header) becomes a loop of its own, innermost first.
bool split_shared_header(LoopForest& f, int l, const Graph& g, const std::vector<std::vector<uint32_t>>& pred) {
  const uint32_t h = f.loops[l].header;
  // Items of l: its own nodes and its child loops.
  auto item_of = [&](uint32_t v) -> int64_t {  // -1 outside l; own node: v; child c: nodes + c
    if (!f.contains(l, v)) return -1;
    int cur = f.node_loop[v];
    if (cur == l) return v;
    while (f.loops[cur].parent != l) cur = f.loops[cur].parent;
    return static_cast<int64_t>(g.nodes.size()) + cur;
  };
  std::vector<int64_t> latches;
  for (uint32_t u : pred[h]) {
    const int64_t it = item_of(u);
    if (it >= 0 && std::find(latches.begin(), latches.end(), it) == latches.end()) latches.push_back(it);
  }
  if (latches.size() < 2 || latches.size() > 16) return false;
  // Body nodes of l: a contiguous run of `order` (nodes sorted by loop pre-order).
  std::vector<uint32_t> body;
  for (uint32_t v = 1; v < g.nodes.size(); ++v)
    if (f.contains(l, v)) body.push_back(v);
  std::map<int64_t, std::vector<int64_t>> item_pred;
  for (uint32_t v : body) {
    const int64_t iv = item_of(v);
    for (uint32_t u : pred[v]) {
      const int64_t iu = item_of(u);
      if (iu >= 0 && iu != iv) item_pred[iv].push_back(iu);
    }
  }
  std::vector<std::vector<int64_t>> cycles;
  for (int64_t latch : latches) {
    std::vector<int64_t> seen, todo;
    if (latch != h) {  // a self edge on the header closes the cycle {h}: no other items
      seen.push_back(latch);
      todo.push_back(latch);
    }
    while (!todo.empty()) {
      const int64_t x = todo.back();
      todo.pop_back();
      for (int64_t p : item_pred[x])
        if (p != h && std::find(seen.begin(), seen.end(), p) == seen.end()) {
          seen.push_back(p);
          todo.push_back(p);
        }
    }
    std::sort(seen.begin(), seen.end());
    cycles.push_back(seen);
  }
  std::sort(cycles.begin(), cycles.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
  cycles.erase(std::unique(cycles.begin(), cycles.end()), cycles.end());
  if (cycles.size() < 2) return false;
  for (size_t i = 0; i + 1 < cycles.size(); ++i)
    if (cycles[i].size() == cycles[i + 1].size() ||
        !std::includes(cycles[i + 1].begin(), cycles[i + 1].end(), cycles[i].begin(), cycles[i].end()))
      return false;  // not a chain of nested cycles: keep one loop
  // The outermost cycle (plus the header) must be the whole loop.
  std::vector<int64_t> items;
  for (uint32_t v : body) {
    const int64_t it = item_of(v);
    if (it != h && std::find(items.begin(), items.end(), it) == items.end()) items.push_back(it);
  }
  if (items.size() != cycles.back().size()) return false;

  // l stays the outermost; new loops nest inside it, innermost last.
  std::vector<int> chain{l};
  for (size_t i = cycles.size() - 1; i-- > 0;) {
    Loop inner;
    inner.header = h;
    inner.parent = chain.back();
    inner.irreducible = f.loops[l].irreducible;
    f.loops.push_back(inner);
    const int id = static_cast<int>(f.loops.size()) - 1;
    chain.push_back(id);
  }
  // chain[k] holds the items of cycles[size-1-k] not in smaller cycles.
  auto level_of = [&](int64_t item) {
    size_t k = 0;
    while (k + 1 < cycles.size() && std::binary_search(cycles[k].begin(), cycles[k].end(), item) == false) ++k;
    return chain[cycles.size() - 1 - k];
  };
  std::vector<int> old_children = std::move(f.loops[l].children);
  std::vector<uint32_t> old_own = std::move(f.loops[l].own);
  f.loops[l].children.clear();
  f.loops[l].own.clear();
  for (size_t k = 1; k < chain.size(); ++k) f.loops[chain[k - 1]].children.push_back(chain[k]);
  f.loops[chain.back()].own.push_back(h);
  f.node_loop[h] = chain.back();
  for (uint32_t v : old_own) {
    if (v == h) continue;
    const int to = level_of(v);
    f.loops[to].own.push_back(v);
    f.node_loop[v] = to;
  }
  for (int c : old_children) {
    const int to = level_of(static_cast<int64_t>(g.nodes.size()) + c);
    f.loops[to].children.push_back(c);
    f.loops[c].parent = to;
  }
  return true;
}

// How an arrival at loop l's header h from node `from` counts for l.
enum class Arrival { kEntry, kBackEdge, kNested };

Arrival classify_arrival(const LoopForest& f, int l, uint32_t h, uint32_t from) {
  if (from == kStartNode || !f.contains(l, from)) return Arrival::kEntry;
  // Like compute_figures: the innermost loop around h holding `from` owns the edge.
  for (int k = f.node_loop[h]; k != l && k >= 0; k = f.loops[k].parent)
    if (f.contains(k, from)) return Arrival::kNested;
  return Arrival::kBackEdge;
}

struct TripTally {
  uint64_t entries = 0, trips = 0, min = 0, max = 0;
  bool consistent = true;
  void close(uint64_t n) {
    min = entries == 0 ? n : std::min(min, n);
    max = std::max(max, n);
    ++entries;
    trips += n;
  }
};

// One thread's arrival runs at one node, in order.
using NodeRuns = std::vector<const ArrivalRun*>;

// Walks one thread's arrivals at the header: an entry starts a trip count,
// the loop's own back edges add to it, nested loops' back edges do not.
void tally_runs(const LoopForest& f, int l, const NodeRuns& runs, TripTally& t) {
  const uint32_t h = f.loops[l].header;
  uint64_t current = 0;  // trips of the entry under way, 0 before the first
  for (const ArrivalRun* run : runs) {
    switch (classify_arrival(f, l, h, run->from)) {
      case Arrival::kEntry:
        if (current > 0) t.close(current);
        for (uint64_t i = 1; i < run->count; ++i) t.close(1);
        current = 1;
        break;
      case Arrival::kBackEdge:
        if (current == 0) t.consistent = false;
        current += run->count;
        break;
      case Arrival::kNested:
        break;
    }
  }
  if (current > 0) t.close(current);
}

// Per-entry trip counts. The counts decide them for one entry or one trip
// per entry; otherwise the header's arrival runs do, when they account for
// every entry and trip (a reducible loop is entered only at its header; logs
// dropped over budget leave entries unaccounted, so nothing wrong is shown).
void count_trips(LoopForest& f, const Graph& g) {
  std::vector<uint8_t> wanted(g.nodes.size(), 0);
  for (Loop& L : f.loops) {
    if (L.entries == 0) continue;
    if (L.entries == 1 || L.iterations == L.entries) {
      L.trips_known = true;
      L.trips_min = L.trips_max = L.iterations / L.entries;
    } else if (!L.irreducible) {
      wanted[L.header] = 1;
    }
  }
  // Per wanted header, per thread, its runs in order.
  std::vector<std::vector<NodeRuns>> runs_of(g.nodes.size());
  std::vector<size_t> log_of(g.nodes.size(), SIZE_MAX);
  for (size_t i = 0; i < g.arrivals.size(); ++i)
    for (const ArrivalRun& run : g.arrivals[i].runs) {
      if (run.node >= g.nodes.size() || !wanted[run.node]) continue;
      if (log_of[run.node] != i) {
        log_of[run.node] = i;
        runs_of[run.node].emplace_back();
      }
      runs_of[run.node].back().push_back(&run);
    }
  for (size_t l = 0; l < f.loops.size(); ++l) {
    Loop& L = f.loops[l];
    if (L.trips_known || L.entries == 0 || L.irreducible) continue;
    TripTally t;
    for (const NodeRuns& runs : runs_of[L.header]) tally_runs(f, static_cast<int>(l), runs, t);
    if (!t.consistent || t.entries != L.entries || t.trips != L.iterations) continue;
    L.trips_known = true;
    L.trips_min = t.min;
    L.trips_max = t.max;
  }
}

void compute_figures(LoopForest& f, const Graph& g) {
  // Post-order: children before parents (indices from the numbering).
  std::vector<int> post(f.loops.size());
  for (size_t l = 0; l < f.loops.size(); ++l) post[l] = static_cast<int>(l);
  std::sort(post.begin(), post.end(), [&](int a, int b) { return f.tout[a] < f.tout[b]; });
  for (size_t v = 1; v < g.nodes.size(); ++v) {
    const int l = f.node_loop[v];
    if (l < 0) continue;
    f.loops[l].events += g.nodes[v].duration.count;
    f.loops[l].time_ns += g.nodes[v].busy_ns;
    ++f.loops[l].body_nodes;
  }
  for (const auto& [key, e] : g.edges) {
    const auto [u, v] = key;
    // Walk up from v's innermost loop: loops without u are entered, the first
    // with u holds the edge (a back edge if v is its header).
    for (int l = f.node_loop[v]; l >= 0; l = f.loops[l].parent) {
      if (u != kStartNode && f.contains(l, u)) {
        if (f.loops[l].header == v) f.loops[l].back_edges += e.count;
        f.loops[l].time_ns += e.gap.sum;
        break;
      }
      f.loops[l].entries += e.count;
    }
  }
  for (int l : post) {
    Loop& L = f.loops[l];
    for (int c : L.children) {
      L.events += f.loops[c].events;
      L.time_ns += f.loops[c].time_ns;
      L.body_nodes += f.loops[c].body_nodes;
    }
    L.iterations = L.entries + L.back_edges;
    L.time_share = g.span_ns > 0 ? static_cast<double>(L.time_ns) / static_cast<double>(g.span_ns) : 0.0;
  }
  std::vector<int> stack(f.roots.begin(), f.roots.end());
  for (int r : f.roots) f.loops[r].depth = 0;
  while (!stack.empty()) {
    const int l = stack.back();
    stack.pop_back();
    for (int c : f.loops[l].children) {
      f.loops[c].depth = f.loops[l].depth + 1;
      stack.push_back(c);
    }
  }
  count_trips(f, g);
  // Regular nests (no irreducible loop, the same trips in every entry of the
  // outer loop; inner loops may vary: np.load seeks 2 or 3 times) are what a
  // program's main loop looks like; start-up (imports, library loading) is
  // irregular. The main loop is the regular loop with the most time (events
  // on ties) among those with at least 1% of the events, else the top-level
  // loop with the most events. Regular loops are looked for at every depth: one call late in
  // the run that start-up made too (an import, a stat of the data directory)
  // closes a cycle through start-up, and the training loop nests in it.
  std::vector<uint8_t> reducible(f.loops.size(), 1), regular(f.loops.size(), 0);
  for (int l : post) {
    const Loop& L = f.loops[l];
    reducible[l] = !L.irreducible;
    for (int c : L.children) reducible[l] &= reducible[c];
    const bool same_trips =
        L.trips_known ? L.trips_min == L.trips_max : L.entries > 0 && L.iterations % L.entries == 0;
    regular[l] = reducible[l] && same_trips;
  }
  // At least 1% of the events: shutdown's few calls with long gaps are not
  // the main loop (time would not do: Python's start-up can take 99% of a
  // short job's time).
  auto preferred = [&](int l) { return regular[l] && (100 * f.loops[l].events >= g.events || g.span_ns == 0); };
  // Among preferred loops the one with the most time wins (a directory
  // listing at start-up has many events and no time), events on ties; the
  // runtime's graphs have no times, and the fallback goes by events.
  auto better = [&](int a, int b) {
    if (b < 0) return true;
    if (preferred(a) != preferred(b)) return preferred(a);
    const Loop &A = f.loops[a], &B = f.loops[b];
    if (preferred(a) && g.span_ns > 0 && A.time_ns != B.time_ns) return A.time_ns > B.time_ns;
    return A.events > B.events || (A.events == B.events && A.time_ns > B.time_ns);
  };
  for (int r : f.roots)
    if (better(r, f.main_loop)) f.main_loop = r;
  // A nested loop must hold at least half its top-level loop's time: a
  // regular per-file loop inside an irregular loop over the files is not
  // the program's main loop.
  auto root_of = [&](int l) {
    while (f.loops[l].parent >= 0) l = f.loops[l].parent;
    return l;
  };
  for (int l = 0; l < static_cast<int>(f.loops.size()); ++l)
    if (f.loops[l].parent >= 0 && preferred(l) && 2 * f.loops[l].time_ns >= f.loops[root_of(l)].time_ns &&
        better(l, f.main_loop))
      f.main_loop = l;
}

}  // namespace

bool LoopForest::contains(int l, uint32_t v) const {
  const int nl = node_loop[v];
  return nl >= 0 && tin[l] <= tin[nl] && tout[nl] <= tout[l];
}

LoopForest find_loops(const Graph& g) {
  const size_t n = g.nodes.size();
  const Succ succ = g.successors();
  WeiState w(n);
  w.run(succ, kStartNode);

  LoopForest f;
  f.node_loop.assign(n, -1);
  std::vector<int> loop_of_header(n, -1);
  for (uint32_t v = 0; v < n; ++v)
    if (w.is_header[v]) {
      loop_of_header[v] = static_cast<int>(f.loops.size());
      Loop L;
      L.header = v;
      L.irreducible = w.irreducible[v];
      f.loops.push_back(L);
    }
  for (uint32_t v = 0; v < n; ++v) {
    if (w.is_header[v]) {
      f.node_loop[v] = loop_of_header[v];
      Loop& L = f.loops[loop_of_header[v]];
      L.own.insert(L.own.begin(), v);
      if (w.iheader[v] >= 0) {
        L.parent = loop_of_header[w.iheader[v]];
        f.loops[L.parent].children.push_back(loop_of_header[v]);
      }
    } else if (w.iheader[v] >= 0) {
      f.node_loop[v] = loop_of_header[w.iheader[v]];
      f.loops[f.node_loop[v]].own.push_back(v);
    }
  }
  auto collect_roots = [&] {
    f.roots.clear();
    for (size_t l = 0; l < f.loops.size(); ++l)
      if (f.loops[l].parent < 0) f.roots.push_back(static_cast<int>(l));
  };
  collect_roots();
  number_loops(f);

  std::vector<std::vector<uint32_t>> pred(n);
  for (const auto& [key, e] : g.edges) pred[key.second].push_back(key.first);
  const size_t original = f.loops.size();
  for (size_t l = 0; l < original; ++l)
    if (split_shared_header(f, static_cast<int>(l), g, pred)) number_loops(f);
  collect_roots();
  number_loops(f);
  compute_figures(f, g);
  return f;
}

}  // namespace strata::efg
