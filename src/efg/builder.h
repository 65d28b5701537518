// The event flow graph builder over the analyzer's event stream
// (analysis/model.h): consumes one unit at a time; its state merges with
// another builder's and round-trips through bytes, so units can be built in
// parallel and combined in any order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/model.h"
#include "efg/graph.h"

namespace strata::efg {

struct BuilderOptions {
  FileClass file_class = FileClass::kDirectory;
  bool size_classes = true;
};

// Builds one Graph per process from IoEvents. A UnitConsumer so any Source
// feeds it; also usable as the per-unit state of an analysis pass: merge()
// and to_bytes()/from_bytes() combine states built apart.
class Builder : public analysis::UnitConsumer {
 public:
  explicit Builder(BuilderOptions opts = {}) : opts_(opts) {}

  void begin(const std::string& unit, const analysis::Tables* tables, bool sizes_known) override;
  void process(const analysis::ProcessMeta& meta) override;
  void event(const analysis::IoEvent& e) override;
  void events(std::span<const analysis::IoEvent> batch) override;
  void end() override;

  void merge(const Builder& o);
  std::string to_bytes() const;
  // Throws std::runtime_error on malformed bytes.
  static Builder from_bytes(const std::string& bytes);

  // Process graphs by pid (threads already merged into their process).
  const std::map<int64_t, Graph>& processes() const { return processes_; }
  const std::map<int64_t, analysis::ProcessMeta>& metas() const { return metas_; }
  const BuilderOptions& options() const { return opts_; }

 private:
  // A thread's previous event's ids and node, checked before node_cache_;
  // a different context with the same role (loader tag) is the same key.
  static constexpr uint32_t kNoNode = UINT32_MAX;
  struct LastNode {
    uint32_t func = 0, path = 0, ctx = 0;
    int32_t size_class = 0;
    int64_t role = -1;
    uint32_t node = kNoNode;
  };
  // A thread's node of a function id, with the rest of its key: a loop over
  // files calls each function on a new path of the same directory, so the
  // previous node (LastNode) changes every event but this one matches.
  struct FuncNode {
    uint32_t file_class = 0;
    int32_t size_class = 0;
    int64_t role = -1;
    uint32_t node = kNoNode;
  };
  // The two edges a thread last took from a node, the latest first: a node
  // mostly has one or two successors (a read repeated, then the close).
  struct NextEdges {
    uint32_t node[2] = {kNoNode, kNoNode};
    Edge* edge[2] = {nullptr, nullptr};
  };
  struct ThreadCursor {
    LastNode last_node;  // the node cache's key includes the pid: one thread, one pid
    uint32_t last = kStartNode;
    int64_t last_end = 0;
    int64_t first_start = 0;
    std::vector<FuncNode> by_func;  // per function id
    // Per source node: in a loop each node mostly has one or two successors,
    // so most events skip the edge map.
    std::vector<NextEdges> next_edge;
    // This thread's arrival runs (Graph::arrivals once the unit ends) and,
    // per node, 1 + the index of its last run (0: none yet).
    std::vector<ArrivalRun> runs;
    std::vector<uint32_t> last_run;
    bool arrivals_dropped = false;  // over kMaxArrivalRuns: no log for this thread
  };
  struct NodeKey {
    int64_t pid;
    uint32_t func, path;  // path: file_class_of(the path id)
    int32_t size_class;
    int64_t role;  // the event's `loader` tag, -1 none
    bool operator==(const NodeKey&) const = default;
  };
  struct NodeKeyHash {
    size_t operator()(const NodeKey& k) const;
  };
  uint32_t file_class_of(uint32_t path) {
    if (path < class_of_path_.size() && class_of_path_[path] != 0) [[likely]] return class_of_path_[path];
    return file_class_of_slow(path);
  }
  uint32_t file_class_of_slow(uint32_t path);
  static Edge& next_edge(Graph& g, ThreadCursor& t, uint32_t node);
  uint32_t node_of(Graph& g, ThreadCursor& t, const analysis::IoEvent& e);
  uint32_t node_of_slow(Graph& g, ThreadCursor& t, const analysis::IoEvent& e, const NodeKey& key);
  uint32_t new_node(Graph& g, const analysis::IoEvent& e, const NodeKey& key);  // interned, into node_cache_
  static void log_arrival(Graph& g, ThreadCursor& t, uint32_t node);
  static void log_arrival_slow(Graph& g, ThreadCursor& t, uint32_t node);
  int64_t role_of(uint32_t ctx);
  int64_t role_of_slow(uint32_t ctx);
  void on_event(const analysis::IoEvent& e);
  void close_threads();

  BuilderOptions opts_;
  const analysis::Tables* tables_ = nullptr;
  std::map<int64_t, Graph> processes_;
  std::map<int64_t, analysis::ProcessMeta> metas_;
  std::map<std::pair<int64_t, int64_t>, ThreadCursor> threads_;  // (pid, tid), per unit
  std::unordered_map<NodeKey, uint32_t, NodeKeyHash> node_cache_;  // per unit: its ids -> node
  // Per unit: path id -> 1 + directory index (file_class_of), the directories.
  std::vector<uint32_t> class_of_path_;
  // Looked up by string_view (a new path of a known directory allocates nothing).
  struct DirHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const;  // XXH3: a few times cheaper than std::hash on paths
  };
  std::unordered_map<std::string, uint32_t, DirHash, std::equal_to<>> class_ids_;
  std::vector<std::string> class_names_;
  std::vector<int64_t> role_cache_;  // per unit: ctx id -> loader tag, -1 none, kUnknownRole not looked up
  // The last event's thread (per unit; map values do not move): consecutive
  // events mostly come from one thread, so most events skip both map lookups.
  struct LastThread {
    int64_t pid = 0, tid = 0;
    Graph* graph = nullptr;
    ThreadCursor* cursor = nullptr;
  } last_thread_;
};

}  // namespace strata::efg
