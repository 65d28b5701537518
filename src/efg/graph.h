// Event flow graphs (issue 11): nodes are event signatures, edges the
// transitions observed between consecutive events of one thread. The builder
// consumes the analyzer's event stream (analysis/model.h) one unit at a time;
// its state merges with another builder's and round-trips through bytes, so
// units can be built in parallel and combined in any order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/model.h"

namespace strata::efg {

// How an event's file becomes part of its signature.
enum class FileClass : uint8_t {
  kDirectory,  // the file's directory: the 40 samples of one data set are one node
  kPath,       // the exact path
  kAny,        // files are not distinguished
};
bool parse_file_class(const std::string& text, FileClass* out);

struct Signature {
  std::string layer;     // "POSIX", "STDIO", "APP", ...
  std::string function;  // "read", "open64", "dataloader.next"
  std::string file;      // file class text; "" when the event has no file
  int32_t size_class = -1;  // floor(log2(size)) + 1 (0 for 0 bytes), -1 unknown/none
  bool operator==(const Signature&) const = default;
  auto operator<=>(const Signature&) const = default;
};
int32_t size_class_of(int64_t size);
std::string size_class_label(int32_t size_class);  // "4KiB-8KiB" style range, "" for -1
std::string signature_label(const Signature& s);   // "POSIX read /data/train [4KiB-8KiB)"

// Count, sum, min and max of a duration in ns.
struct Stat {
  uint64_t count = 0;
  int64_t sum = 0;
  int64_t min = 0;
  int64_t max = 0;
  void add(int64_t v);
  void merge(const Stat& o);
  double mean() const { return count ? static_cast<double>(sum) / static_cast<double>(count) : 0.0; }
};

// Node 0 is the start of every thread; real nodes are 1..n-1.
inline constexpr uint32_t kStartNode = 0;

struct Node {
  Signature sig;
  Stat duration;  // of the node's events
};

struct Edge {
  uint64_t count = 0;
  Stat gap;       // end of the source event to start of the destination
  Stat duration;  // of the destination event taken through this edge
};

using EdgeKey = std::pair<uint32_t, uint32_t>;

// The graph of one process (or of a merge of processes).
struct Graph {
  std::vector<Node> nodes;  // nodes[0] is the start node
  std::map<EdgeKey, Edge> edges;
  uint64_t events = 0;
  uint64_t threads = 0;
  int64_t span_ns = 0;  // sum over threads of first event start to last event end

  Graph();
  uint32_t intern(const Signature& sig);
  // Adds o's nodes and edges (nodes matched by signature).
  void merge(const Graph& o);
  // True when nodes (in order) and edge counts are equal: timings may differ.
  bool same_structure(const Graph& o) const;
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> successors() const;

 private:
  std::map<Signature, uint32_t> index_;
};

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
  struct ThreadCursor {
    uint32_t last = kStartNode;
    int64_t last_end = 0;
    int64_t first_start = 0;
    // Per source node, the edge this thread last took from it: in a loop
    // each node mostly has one successor, so most events skip the edge map.
    std::vector<std::pair<uint32_t, Edge*>> next_edge;
  };
  struct NodeKey {
    int64_t pid;
    uint32_t func, path;
    int32_t size_class;
    bool operator==(const NodeKey&) const = default;
  };
  struct NodeKeyHash {
    size_t operator()(const NodeKey& k) const;
  };
  uint32_t node_of(Graph& g, const analysis::IoEvent& e);
  void close_threads();

  BuilderOptions opts_;
  const analysis::Tables* tables_ = nullptr;
  std::map<int64_t, Graph> processes_;
  std::map<int64_t, analysis::ProcessMeta> metas_;
  std::map<std::pair<int64_t, int64_t>, ThreadCursor> threads_;  // (pid, tid), per unit
  std::unordered_map<NodeKey, uint32_t, NodeKeyHash> node_cache_;  // per unit: its ids -> node
  // The last event's thread (per unit; map values do not move): consecutive
  // events mostly come from one thread, so most events skip both map lookups.
  struct LastThread {
    int64_t pid = 0, tid = 0;
    Graph* graph = nullptr;
    ThreadCursor* cursor = nullptr;
  } last_thread_;
};

// Directory part of a path ("/data/train/a.bin" -> "/data/train"; "a" -> ".").
std::string directory_of(std::string_view path);

}  // namespace strata::efg
