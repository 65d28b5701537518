// Event flow graphs from hand-built event sequences with known answers:
// nodes, edges, loops and nesting, irreducible flow, deep nesting, merging
// and the byte round trip of the builder state.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "efg/builder.h"
#include "efg/loops.h"
#include "efg/report.h"

namespace {

using namespace strata;

// Feeds events named "func" or "func:path" (one thread unless told) into a builder.
class Feeder {
 public:
  Feeder() {
    tables_.funcs.push_back({});
    tables_.ctxs.push_back({});
    strings_.push_back("");
    tables_.str = [this](uint32_t id) { return std::string_view(strings_[id]); };
  }
  uint32_t func(const std::string& name) {
    auto [it, fresh] = funcs_.try_emplace(name, static_cast<uint32_t>(tables_.funcs.size()));
    if (fresh) tables_.funcs.push_back(analysis::classify(name, "POSIX"));
    return it->second;
  }
  uint32_t str(const std::string& s) {
    auto [it, fresh] = strs_.try_emplace(s, static_cast<uint32_t>(strings_.size()));
    if (fresh) strings_.push_back(s);
    return it->second;
  }
  void feed(efg::Builder& b, const std::vector<std::string>& events, int64_t pid = 1, int64_t tid = 1,
            int64_t size = -1) {
    std::vector<std::pair<int64_t, std::string>> by_thread;
    for (const std::string& ev : events) by_thread.emplace_back(tid, ev);
    feed_threads(b, by_thread, pid, size);
  }
  // Events of several threads of one process, in the order given: (tid, "func:path").
  void feed_threads(efg::Builder& b, const std::vector<std::pair<int64_t, std::string>>& events, int64_t pid = 1,
                    int64_t size = -1) {
    b.begin("unit", &tables_, true);
    analysis::ProcessMeta m;
    m.pid = pid;
    b.process(m);
    for (const auto& [tid, ev] : events) {
      analysis::IoEvent e;
      const size_t colon = ev.find(':');
      e.func = func(ev.substr(0, colon));
      e.path = colon == std::string::npos ? 0 : str(ev.substr(colon + 1));
      e.pid = pid;
      e.tid = tid;
      e.ts = clock_;
      e.dur = 10;
      e.size = size;
      clock_ += 100;
      b.event(e);
    }
    b.end();
  }
  struct Timed {
    int64_t tid;
    std::string func;
    int64_t ts, dur;
  };
  // Events with the times given, in the stream order given.
  void feed_timed(efg::Builder& b, const std::vector<Timed>& events, int64_t pid = 1) {
    b.begin("unit", &tables_, true);
    analysis::ProcessMeta m;
    m.pid = pid;
    b.process(m);
    for (const Timed& t : events) {
      analysis::IoEvent e;
      e.func = func(t.func);
      e.pid = pid;
      e.tid = t.tid;
      e.ts = t.ts;
      e.dur = t.dur;
      b.event(e);
    }
    b.end();
  }

 private:
  analysis::Tables tables_;
  std::vector<std::string> strings_;
  std::map<std::string, uint32_t> funcs_, strs_;
  int64_t clock_ = 0;
};

std::vector<std::string> repeat(const std::vector<std::string>& body, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.insert(out.end(), body.begin(), body.end());
  return out;
}

void append(std::vector<std::string>& a, const std::vector<std::string>& b) { a.insert(a.end(), b.begin(), b.end()); }

// 5 epochs x 40 x {open read x3 close} + a checkpoint per epoch.
std::vector<std::string> epochs_program() {
  std::vector<std::string> epoch = repeat({"open:/d/train/a", "read:/d/train/a", "read:/d/train/a",
                                           "read:/d/train/a", "close:/d/train/a"}, 40);
  append(epoch, {"open:/d/ckpt/c", "write:/d/ckpt/c", "close:/d/ckpt/c"});
  return repeat(epoch, 5);
}

const efg::Graph& only_graph(const efg::Builder& b) {
  EXPECT_EQ(b.processes().size(), 1u);
  return b.processes().begin()->second;
}

uint64_t edge_count(const efg::Graph& g, const std::string& from, const std::string& to) {
  auto id = [&](const std::string& label) -> uint32_t {
    if (label == "start") return efg::kStartNode;
    for (uint32_t v = 1; v < g.nodes.size(); ++v)
      if (efg::signature_label(g.nodes[v].sig) == label) return v;
    ADD_FAILURE() << "no node " << label;
    return 0;
  };
  auto it = g.edges.find({id(from), id(to)});
  return it == g.edges.end() ? 0 : it->second.count;
}

TEST(EfgGraph, NodesAreSignaturesWithDirectoryClass) {
  efg::Builder b;
  Feeder f;
  f.feed(b, epochs_program());
  const efg::Graph& g = only_graph(b);
  ASSERT_EQ(g.nodes.size(), 7u);  // start + open/read/close of train + open/write/close of ckpt
  EXPECT_EQ(efg::signature_label(g.nodes[1].sig), "POSIX open /d/train");
  EXPECT_EQ(g.events, 5u * (40 * 5 + 3));
  EXPECT_EQ(g.edges.size(), 9u);
  EXPECT_EQ(edge_count(g, "start", "POSIX open /d/train"), 1u);
  EXPECT_EQ(edge_count(g, "POSIX read /d/train", "POSIX read /d/train"), 400u);
  EXPECT_EQ(edge_count(g, "POSIX close /d/train", "POSIX open /d/train"), 195u);
  EXPECT_EQ(edge_count(g, "POSIX close /d/train", "POSIX open /d/ckpt"), 5u);
  EXPECT_EQ(edge_count(g, "POSIX close /d/ckpt", "POSIX open /d/train"), 4u);
  // Gaps: each event starts 100 ns after the previous one started and lasts 10 ns.
  const efg::Edge& rr = g.edges.at({2, 2});
  EXPECT_EQ(rr.gap.min, 90);
  EXPECT_EQ(rr.gap.max, 90);
  EXPECT_EQ(rr.duration.sum, 4000);
}

TEST(EfgGraph, FileClassPathAndAny) {
  std::vector<std::string> ev = {"open:/d/a", "open:/d/b", "open:/e/c"};
  for (auto [cls, nodes] : {std::pair{efg::FileClass::kPath, 3u}, {efg::FileClass::kDirectory, 2u},
                            {efg::FileClass::kAny, 1u}}) {
    efg::Builder b({cls, true});
    Feeder f;
    f.feed(b, ev);
    EXPECT_EQ(only_graph(b).nodes.size() - 1, nodes);
  }
}

TEST(EfgGraph, SizeClassesAreLog2) {
  EXPECT_EQ(efg::size_class_of(-1), -1);
  EXPECT_EQ(efg::size_class_of(0), 0);
  EXPECT_EQ(efg::size_class_of(1), 1);
  EXPECT_EQ(efg::size_class_of(4096), 13);
  EXPECT_EQ(efg::size_class_of(8191), 13);
  EXPECT_EQ(efg::size_class_label(13), "4KiB-8KiB");
  efg::Builder b;
  Feeder f;
  f.feed(b, {"read:/d/x"}, 1, 1, 4096);
  f.feed(b, {"read:/d/x"}, 1, 2, 5000);
  f.feed(b, {"read:/d/x"}, 1, 3, 8192);
  EXPECT_EQ(only_graph(b).nodes.size() - 1, 2u);
}

TEST(EfgLoops, EpochsStepsAndReadsNestExactly) {
  efg::Builder b;
  Feeder f;
  f.feed(b, epochs_program());
  const efg::Graph& g = only_graph(b);
  const efg::LoopForest lf = efg::find_loops(g);
  ASSERT_EQ(lf.loops.size(), 3u);
  ASSERT_EQ(lf.roots.size(), 1u);
  const efg::Loop& outer = lf.loops[lf.roots[0]];
  EXPECT_EQ(outer.header, 1u);
  EXPECT_EQ(outer.entries, 1u);
  EXPECT_EQ(outer.iterations, 5u);
  EXPECT_EQ(outer.body_nodes, 6u);
  EXPECT_EQ(outer.events, g.events);
  ASSERT_EQ(outer.children.size(), 1u);
  const efg::Loop& step = lf.loops[outer.children[0]];
  EXPECT_EQ(step.header, 1u);
  EXPECT_EQ(step.entries, 5u);
  EXPECT_EQ(step.iterations, 200u);
  EXPECT_EQ(step.body_nodes, 3u);
  ASSERT_EQ(step.children.size(), 1u);
  const efg::Loop& reads = lf.loops[step.children[0]];
  EXPECT_EQ(reads.header, 2u);
  EXPECT_EQ(reads.entries, 200u);
  EXPECT_EQ(reads.iterations, 600u);
  EXPECT_FALSE(outer.irreducible);
  EXPECT_EQ(lf.main_loop, lf.roots[0]);
  EXPECT_EQ(efg::structure_line(g, lf), "loop x5 { loop x40 { open@train read x3 close@train } open@ckpt write close@ckpt }");
}

TEST(EfgLoops, LoopLineShowsOneLoopAndItsNest) {
  std::vector<std::string> events = {"stat:/d/cfg", "stat:/d/cfg", "open:/d/cfg"};  // a loop before the main one
  append(events, epochs_program());
  efg::Builder b;
  Feeder f;
  f.feed(b, events);
  const efg::Graph& g = only_graph(b);
  const efg::LoopForest lf = efg::find_loops(g);
  ASSERT_EQ(lf.roots.size(), 2u);
  ASSERT_GE(lf.main_loop, 0);
  EXPECT_EQ(efg::loop_line(g, lf, lf.main_loop),
            "loop x5 { loop x40 { open@train read x3 close@train } open@ckpt write close@ckpt }");
  EXPECT_EQ(efg::loop_line(g, lf, lf.roots[0]), "stat x2");
  EXPECT_EQ(efg::structure_line(g, lf),
            "stat x2 loop x5 { loop x40 { open@train read x3 close@train } open@ckpt write close@ckpt }");
}

// Threads interleaved event by event in one unit: each keeps its own
// transitions (the builder's last-thread and per-node edge caches switch).
TEST(EfgGraph, InterleavedThreadsKeepTheirOwnTransitions) {
  std::vector<std::pair<int64_t, std::string>> events;
  for (int i = 0; i < 3; ++i)
    for (const char* ev : {"open:/d/a", "read:/d/a", "close:/d/a"}) {
      events.emplace_back(1, ev);
      events.emplace_back(2, "stat:/e/b");
    }
  events.emplace_back(1, "read:/d/a");  // thread 1: close -> read, a new edge from a cached node
  efg::Builder b;
  Feeder f;
  f.feed_threads(b, events, 5);
  const efg::Graph& g = only_graph(b);
  EXPECT_EQ(g.threads, 2u);
  EXPECT_EQ(g.events, 19u);
  EXPECT_EQ(g.edges.size(), 7u);
  EXPECT_EQ(edge_count(g, "start", "POSIX open /d"), 1u);
  EXPECT_EQ(edge_count(g, "POSIX open /d", "POSIX read /d"), 3u);
  EXPECT_EQ(edge_count(g, "POSIX read /d", "POSIX close /d"), 3u);
  EXPECT_EQ(edge_count(g, "POSIX close /d", "POSIX open /d"), 2u);
  EXPECT_EQ(edge_count(g, "POSIX close /d", "POSIX read /d"), 1u);
  EXPECT_EQ(edge_count(g, "start", "POSIX stat /e"), 1u);
  EXPECT_EQ(edge_count(g, "POSIX stat /e", "POSIX stat /e"), 8u);
  // Gaps are per thread: each thread's events start 200 ns apart and last 10 ns.
  for (const auto& [key, e] : g.edges) {
    if (key.first == efg::kStartNode) continue;
    EXPECT_EQ(e.gap.min, 190) << key.first << "->" << key.second;
    EXPECT_EQ(e.gap.max, 190) << key.first << "->" << key.second;
  }
}

TEST(EfgLoops, StraightLineHasNoLoops) {
  efg::Builder b;
  Feeder f;
  f.feed(b, {"open:/a/x", "read:/a/x", "close:/a/x"});
  EXPECT_TRUE(efg::find_loops(only_graph(b)).loops.empty());
}

TEST(EfgLoops, IrreducibleFlowIsFlagged) {
  // a -> b and a -> c, then b and c alternate: the cycle {b, c} is entered at both.
  efg::Builder b;
  Feeder f;
  f.feed(b, {"a", "b", "c", "b", "c"}, 1, 1);
  f.feed(b, {"a", "c", "b", "c"}, 1, 2);
  const efg::Graph& g = only_graph(b);
  const efg::LoopForest lf = efg::find_loops(g);
  ASSERT_EQ(lf.loops.size(), 1u);
  const efg::Loop& L = lf.loops[0];
  EXPECT_TRUE(L.irreducible);
  EXPECT_EQ(L.body_nodes, 2u);
  EXPECT_EQ(L.entries, 2u);  // a->b once, a->c once
  EXPECT_EQ(L.events, 7u);
}

TEST(EfgLoops, DeepNestingAndLongChainsDoNotCrash) {
  // n1 n2 ... nD nD-1 ... n1: every ni (i < D) heads a loop around n(i+1): D-1 nested loops.
  constexpr int kDepth = 10000;
  std::vector<std::string> ev;
  for (int i = 1; i <= kDepth; ++i) ev.push_back("f" + std::to_string(i));
  for (int i = kDepth - 1; i >= 1; --i) ev.push_back("f" + std::to_string(i));
  efg::Builder b;
  Feeder f;
  f.feed(b, ev);
  const efg::Graph& g = only_graph(b);
  const efg::LoopForest lf = efg::find_loops(g);
  ASSERT_EQ(lf.loops.size(), static_cast<size_t>(kDepth - 1));
  ASSERT_EQ(lf.roots.size(), 1u);
  int deepest = 0;
  for (const efg::Loop& L : lf.loops) deepest = std::max(deepest, L.depth);
  EXPECT_EQ(deepest, kDepth - 2);
  EXPECT_EQ(lf.loops[lf.roots[0]].body_nodes, static_cast<uint64_t>(kDepth));
  efg::Report r = efg::make_report(b);
  EXPECT_GT(efg::render_text(r).size(), 0u);
  EXPECT_GT(efg::render_json(r).size(), 0u);
  EXPECT_GT(efg::render_dot(r, 0).size(), 0u);

  // A chain of 200,000 distinct events: no loops, no recursion.
  std::vector<std::string> chain;
  for (int i = 0; i < 200000; ++i) chain.push_back("g" + std::to_string(i));
  efg::Builder c;
  Feeder fc;
  fc.feed(c, chain);
  EXPECT_TRUE(efg::find_loops(only_graph(c)).loops.empty());
}

TEST(EfgLoops, LoopThatChangesHalfWay) {
  // 10 trips of {open read close}, then 10 of {open read stat close}: one loop
  // of 20 trips whose body gains a node; the new edges count 10 each.
  std::vector<std::string> ev = repeat({"open:/d/x", "read:/d/x", "close:/d/x"}, 10);
  append(ev, repeat({"open:/d/x", "read:/d/x", "stat:/d/x", "close:/d/x"}, 10));
  efg::Builder b;
  Feeder f;
  f.feed(b, ev);
  const efg::Graph& g = only_graph(b);
  EXPECT_EQ(edge_count(g, "POSIX read /d", "POSIX close /d"), 10u);
  EXPECT_EQ(edge_count(g, "POSIX read /d", "POSIX stat /d"), 10u);
  EXPECT_EQ(edge_count(g, "POSIX stat /d", "POSIX close /d"), 10u);
  EXPECT_EQ(edge_count(g, "POSIX close /d", "POSIX open /d"), 19u);
  const efg::LoopForest lf = efg::find_loops(g);
  ASSERT_EQ(lf.loops.size(), 1u);
  EXPECT_EQ(lf.loops[0].entries, 1u);
  EXPECT_EQ(lf.loops[0].iterations, 20u);
  EXPECT_EQ(lf.loops[0].body_nodes, 4u);
  EXPECT_EQ(efg::structure_line(g, lf), "loop x20 { open read close stat }");
}

TEST(EfgLoops, SelfLoopOnHeaderNestsInsideOuterLoop) {
  efg::Builder b;
  Feeder f;
  f.feed(b, repeat({"a", "a", "a", "b"}, 4));
  const efg::LoopForest lf = efg::find_loops(only_graph(b));
  ASSERT_EQ(lf.loops.size(), 2u);
  const efg::Loop& outer = lf.loops[lf.roots[0]];
  EXPECT_EQ(outer.iterations, 4u);
  ASSERT_EQ(outer.children.size(), 1u);
  EXPECT_EQ(lf.loops[outer.children[0]].iterations, 12u);
  EXPECT_EQ(lf.loops[outer.children[0]].entries, 4u);
}

// An inner loop entered twice, once for 6 trips and once for 7: the
// header's arrival log gives each entry's count, printed as a range.
TEST(EfgLoops, TripsPerEntryAreExactMinAndMax) {
  std::vector<std::string> ev = repeat({"open:/d/train/a", "read:/d/train/a", "close:/d/train/a"}, 6);
  append(ev, {"write:/d/ckpt/c"});
  append(ev, repeat({"open:/d/train/a", "read:/d/train/a", "close:/d/train/a"}, 7));
  append(ev, {"write:/d/ckpt/c"});
  efg::Builder b;
  Feeder f;
  f.feed(b, ev);
  const efg::Graph& g = only_graph(b);
  const efg::LoopForest lf = efg::find_loops(g);
  ASSERT_EQ(lf.roots.size(), 1u);
  const efg::Loop& outer = lf.loops[lf.roots[0]];
  ASSERT_EQ(outer.children.size(), 1u);
  const efg::Loop& step = lf.loops[outer.children[0]];
  EXPECT_EQ(step.entries, 2u);
  EXPECT_EQ(step.iterations, 13u);
  EXPECT_TRUE(step.trips_known);
  EXPECT_EQ(step.trips_min, 6u);
  EXPECT_EQ(step.trips_max, 7u);
  EXPECT_TRUE(outer.trips_known);
  EXPECT_EQ(outer.trips_min, 2u);
  EXPECT_EQ(outer.trips_max, 2u);
  EXPECT_EQ(efg::structure_line(g, lf), "loop x2 { loop x6-7 { open read close } write }");
  const std::string json = efg::render_json(efg::make_report(b));
  EXPECT_NE(json.find("\"entries\":2,\"iterations\":13,\"trips_min\":6,\"trips_max\":7,"), std::string::npos) << json;

  // Whole on average is not whole per entry: 5 + 7 trips print as x5-7, not x6.
  std::vector<std::string> uneven = repeat({"open:/d/train/a", "close:/d/train/a"}, 5);
  append(uneven, {"write:/d/ckpt/c"});
  append(uneven, repeat({"open:/d/train/a", "close:/d/train/a"}, 7));
  append(uneven, {"write:/d/ckpt/c"});
  efg::Builder u;
  f.feed(u, uneven);
  EXPECT_EQ(efg::structure_line(only_graph(u), efg::find_loops(only_graph(u))),
            "loop x2 { loop x5-7 { open close } write }");
}

// Trip counts per entry across threads and units: each thread's log counts
// its own entries; logs merged from byte states give the same figures.
TEST(EfgLoops, TripsPerEntryAcrossThreadsAndMergedStates) {
  auto body = [](int trips) { return repeat({"open:/d/x", "read:/d/x", "close:/d/x"}, trips); };
  std::vector<std::string> t1 = {"stat:/d/x"}, t2 = {"stat:/d/x"};
  append(t1, body(3));
  append(t2, body(9));
  efg::Builder a, b;
  Feeder f;
  f.feed(a, t1, 4, 1);
  f.feed(b, t2, 4, 2);
  efg::Builder merged = efg::Builder::from_bytes(a.to_bytes());
  merged.merge(efg::Builder::from_bytes(b.to_bytes()));
  const efg::Graph& g = only_graph(merged);
  EXPECT_EQ(g.threads, 2u);
  const efg::LoopForest lf = efg::find_loops(g);
  ASSERT_EQ(lf.loops.size(), 1u);
  EXPECT_EQ(lf.loops[0].entries, 2u);
  EXPECT_EQ(lf.loops[0].iterations, 12u);
  EXPECT_EQ(lf.loops[0].trips_min, 3u);
  EXPECT_EQ(lf.loops[0].trips_max, 9u);
  EXPECT_EQ(efg::structure_line(g, lf), "loop x3-9 { open read close }");
}

// Without arrival logs (the runtime's graphs, or logs dropped over budget)
// the totals are printed as a fraction, never a rounded per-entry count.
// Two threads enter the loop, for 6 and 7 trips.
TEST(EfgLoops, TripsWithoutLogsPrintTotals) {
  std::vector<std::pair<int64_t, std::string>> ev;
  for (int i = 0; i < 6; ++i) ev.insert(ev.end(), {{1, "open:/d/x"}, {1, "close:/d/x"}});
  for (int i = 0; i < 7; ++i) ev.insert(ev.end(), {{2, "open:/d/x"}, {2, "close:/d/x"}});
  efg::Builder b;
  Feeder f;
  f.feed_threads(b, ev);
  efg::Graph g = only_graph(b);
  EXPECT_EQ(efg::structure_line(g, efg::find_loops(g)), "loop x6-7 { open close }");
  g.arrivals.clear();
  const efg::LoopForest lf = efg::find_loops(g);
  ASSERT_EQ(lf.loops.size(), 1u);
  EXPECT_EQ(lf.loops[0].entries, 2u);
  EXPECT_FALSE(lf.loops[0].trips_known);
  EXPECT_EQ(efg::structure_line(g, lf), "loop x13/2 { open close }");
  efg::Report r;
  r.groups.push_back({{1}, "", g, lf});
  r.job = g;
  r.job_loops = lf;
  const std::string json = efg::render_json(r);
  EXPECT_NE(json.find("\"iterations\":13,\"trips_min\":null,\"trips_max\":null,"), std::string::npos) << json;
}

// A thread whose arrivals need more than kMaxArrivalRuns runs loses its log
// whole; another thread keeps its own, but the loop both entered shows
// totals: per-entry counts from one thread's log would be guesses.
TEST(EfgLoops, ArrivalLogOverBudgetIsDroppedWhole) {
  // Arrivals at `a` alternate between b and c: one run per arrival.
  const int groups = static_cast<int>(efg::kMaxArrivalRuns / 2) + 10;
  std::vector<std::pair<int64_t, std::string>> ev;
  for (const std::string& e : repeat({"a", "b", "a", "c"}, groups)) ev.emplace_back(1, e);
  for (const std::string& e : repeat({"a", "b", "a", "c"}, 3)) ev.emplace_back(2, e);
  efg::Builder b;
  Feeder f;
  f.feed_threads(b, ev);
  const efg::Graph& g = only_graph(b);
  uint64_t runs = 0;
  for (const efg::ArrivalLog& log : g.arrivals) runs += log.runs.size();
  EXPECT_EQ(g.arrival_runs, runs);
  EXPECT_EQ(runs, 8u);  // thread 2 only: a from start, b, c, b, c, b; b from a; c from a
  const efg::LoopForest lf = efg::find_loops(g);
  ASSERT_EQ(lf.loops.size(), 1u);
  EXPECT_EQ(lf.loops[0].entries, 2u);
  EXPECT_FALSE(lf.loops[0].trips_known);
  EXPECT_EQ(efg::structure_line(g, lf), "loop x" + std::to_string(2 * (groups + 3)) + "/2 { a b c }");
}

// time_share: busy time (overlaps counted once) plus gaps inside the loop,
// over the sum of the threads' spans. An application region written after
// the reads inside it (strata's order) used to count twice and push the
// share over 1. Two threads interleaved in the stream, times known.
TEST(EfgLoops, TimeShareCountsOverlapsOnceAcrossThreads) {
  std::vector<Feeder::Timed> ev;
  // Thread 2: open at 900 (50 ns), then stat x4 at 1000, 1100, 1200, 1300 (30 ns each).
  ev.push_back({2, "open", 900, 50});
  for (int i = 0; i < 3; ++i) {
    const int64_t base = 50 * i;  // thread 1: step region [base, base+40) around two reads
    ev.push_back({1, "read", base, 10});
    ev.push_back({1, "read", base + 20, 10});
    ev.push_back({2, "stat", 1000 + 100 * i, 30});
    ev.push_back({1, "dataloader.next", base, 40});
  }
  ev.push_back({2, "stat", 1300, 30});
  efg::Builder b;
  Feeder f;
  f.feed_timed(b, ev);
  const efg::Graph& g = only_graph(b);
  EXPECT_EQ(g.threads, 2u);
  EXPECT_EQ(g.span_ns, 140 + 430);  // thread 1: [0, 140); thread 2: [900, 1330)
  const efg::LoopForest lf = efg::find_loops(g);
  ASSERT_EQ(lf.roots.size(), 2u);
  const efg::Loop* steps = nullptr;
  const efg::Loop* stats = nullptr;
  for (int r : lf.roots) (lf.loops[r].body_nodes == 2 ? steps : stats) = &lf.loops[r];
  ASSERT_TRUE(steps && stats);
  // Reads 6 x 10, the regions' tails 3 x 10, gaps read->read 3 x 10 and region->read 2 x 10.
  EXPECT_EQ(steps->time_ns, 140);
  EXPECT_EQ(steps->iterations, 3u);
  EXPECT_DOUBLE_EQ(steps->time_share, 140.0 / 570.0);
  // stat x4: 4 x 30 busy + 3 x 70 gaps; the open before it and its gap are outside.
  EXPECT_EQ(stats->time_ns, 330);
  EXPECT_DOUBLE_EQ(stats->time_share, 330.0 / 570.0);
  int64_t busy = 0;
  for (const efg::Node& n : g.nodes) busy += n.busy_ns;
  int64_t gaps = 0;
  for (const auto& [key, e] : g.edges) gaps += e.gap.sum;
  EXPECT_EQ(busy + gaps, g.span_ns);  // busy time and gaps partition the threads' spans
  // The job of two such processes: same shares.
  efg::Builder two;
  f.feed_timed(two, ev, 1);
  f.feed_timed(two, ev, 2);
  const efg::Report r = efg::make_report(two);
  for (int root : r.job_loops.roots) EXPECT_LE(r.job_loops.loops[root].time_share, 1.0);
  EXPECT_EQ(r.job.span_ns, 2 * 570);
}

TEST(EfgState, MergeAddsThreadsAndProcesses) {
  efg::Builder a, b;
  Feeder f;
  f.feed(a, epochs_program(), 7, 7);
  f.feed(b, epochs_program(), 7, 8);
  f.feed(b, epochs_program(), 9, 9);
  a.merge(b);
  ASSERT_EQ(a.processes().size(), 2u);
  const efg::Graph& g7 = a.processes().at(7);
  EXPECT_EQ(g7.threads, 2u);
  EXPECT_EQ(g7.events, 2u * 5 * 203);
  EXPECT_EQ(g7.edges.at({2, 2}).count, 800u);
  // Identical per-process graphs are stored once.
  efg::Builder c;
  f.feed(c, epochs_program(), 10, 10);
  f.feed(c, epochs_program(), 11, 11);
  efg::Report r = efg::make_report(c);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].pids, (std::vector<int64_t>{10, 11}));
  EXPECT_EQ(r.job.events, 2u * 5 * 203);
}

TEST(EfgState, BytesRoundTripExactly) {
  efg::Builder b({efg::FileClass::kPath, false});
  Feeder f;
  f.feed(b, epochs_program(), 3, 3);
  f.feed(b, {"x:/p/q", "y"}, 4, 4, 100);
  const std::string bytes = b.to_bytes();
  const efg::Builder back = efg::Builder::from_bytes(bytes);
  EXPECT_EQ(back.to_bytes(), bytes);
  EXPECT_EQ(back.options().file_class, efg::FileClass::kPath);
  EXPECT_EQ(efg::render_json(efg::make_report(back)), efg::render_json(efg::make_report(b)));
  EXPECT_THROW(efg::Builder::from_bytes("EFG2"), std::runtime_error);
  for (size_t cut = 0; cut < bytes.size(); cut += 7)
    EXPECT_THROW(efg::Builder::from_bytes(bytes.substr(0, cut)), std::runtime_error) << "cut at " << cut;
}

}  // namespace
