// Loops of an event flow graph and their nesting: Wei, Mao, Zou and Chen,
// "A new algorithm for identifying loops in decompilation" (SAS 2007), a
// single depth-first pass that also finds irreducible loops, written with an
// explicit stack (no recursion depth limit). Loops sharing a header whose
// back edges close strictly nested cycles (an epoch loop and its step loop
// both starting with `open`) are split into nested loops. See docs/efg.md.
#pragma once

#include <cstdint>
#include <vector>

#include "efg/graph.h"

namespace strata::efg {

struct Loop {
  uint32_t header = 0;
  int parent = -1;                 // index into LoopForest::loops, -1 at top level
  std::vector<int> children;       // nested loops, by header id then size
  std::vector<uint32_t> own;       // body nodes not in a nested loop (header first when own)
  uint64_t body_nodes = 0;         // nodes of the whole body, nested loops included
  uint64_t entries = 0;            // transitions into the body from outside it
  uint64_t back_edges = 0;         // transitions from the body back to the header
  uint64_t iterations = 0;         // entries + back_edges: trips around the loop
  // Fewest and most trips in one entry; known when the header's arrival logs
  // account for every entry (or the counts alone decide: one entry, one trip each).
  bool trips_known = false;
  uint64_t trips_min = 0;
  uint64_t trips_max = 0;
  uint64_t events = 0;             // events of body nodes
  int64_t time_ns = 0;             // body events' busy time + gaps between body events
  double time_share = 0;           // time_ns / the graph's span: in [0, 1]
  bool irreducible = false;        // entered somewhere other than its header
  int depth = 0;                   // 0 at top level
};

struct LoopForest {
  std::vector<Loop> loops;
  std::vector<int> roots;
  // The "big outer loop": the regular loop (no irreducible loop in its nest,
  // the same trips in every entry) with the most time among those with 1% of
  // the events, else the top-level loop with the most events (docs/efg.md).
  int main_loop = -1;
  // Whether node v is in the body of loop l.
  bool contains(int l, uint32_t v) const;
  std::vector<int> node_loop;  // innermost loop of each node, -1 outside loops
  std::vector<uint32_t> tin, tout;  // pre/post order numbers of loops
};

LoopForest find_loops(const Graph& g);

}  // namespace strata::efg
