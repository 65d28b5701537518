// What `strata efg` shows: process graphs grouped (identical per-rank graphs
// stored once), their loops, and the job's merged graph; rendered as text,
// JSON (docs/efg.md) or graphviz DOT.
#pragma once

#include <string>
#include <vector>

#include "efg/builder.h"
#include "efg/loops.h"

namespace strata::efg {

// Processes whose graphs have the same nodes and edge counts, merged.
struct ProcessGroup {
  std::vector<int64_t> pids;
  std::string exe;
  Graph graph;
  LoopForest loops;
};

struct Report {
  FileClass file_class = FileClass::kDirectory;
  std::vector<ProcessGroup> groups;
  Graph job;  // every process merged
  LoopForest job_loops;
};

Report make_report(const Builder& b);

// One line of nested loops: "loop x5 { loop x40 { open read x3 close } open@ckpt write }".
std::string structure_line(const Graph& g, const LoopForest& f);
// The same for one loop and the loops nested in it (the main loop of a
// process in `strata analyze`'s structure section).
std::string loop_line(const Graph& g, const LoopForest& f, int loop);

std::string render_text(const Report& r);
std::string render_json(const Report& r);
// The graph of one group (or the job when group < 0): loops as nested
// clusters, edge width by count.
std::string render_dot(const Report& r, int group);

}  // namespace strata::efg
