// Event flow graphs (issue 11): nodes are event signatures, edges the
// transitions observed between consecutive events of one thread. This core
// (Graph, Signature, Stat; loops.h) needs only the standard library, so the
// runtime links it for smart collection (src/runtime/smart.cc); the builder
// over the analyzer's event model is efg/builder.h.
#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>


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
  // The pass an event belongs to when the Python layer tags it: "loader=1"
  // (the second DataLoader iterated, e.g. validation); "" untagged.
  std::string role;
  bool operator==(const Signature&) const = default;
  auto operator<=>(const Signature&) const = default;
};
struct SignatureHash {
  size_t operator()(const Signature& s) const noexcept {
    size_t h = std::hash<std::string>()(s.function);
    auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    mix(std::hash<std::string>()(s.file));
    mix(std::hash<std::string>()(s.layer));
    mix(std::hash<std::string>()(s.role));
    mix(static_cast<size_t>(static_cast<uint32_t>(s.size_class)));
    return h;
  }
};
inline int32_t size_class_of(int64_t size) {
  if (size < 0) return -1;
  if (size == 0) return 0;
  return static_cast<int32_t>(std::bit_width(static_cast<uint64_t>(size)));
}
std::string size_class_label(int32_t size_class);  // "4KiB-8KiB" style range, "" for -1
std::string signature_label(const Signature& s);   // "POSIX read /data/train [4KiB-8KiB) loader=0"

// Count, sum, min and max of a duration in ns.
struct Stat {
  uint64_t count = 0;
  int64_t sum = 0;
  int64_t min = 0;
  int64_t max = 0;
  void add(int64_t v) {
    if (count == 0 || v < min) min = v;
    if (count == 0 || v > max) max = v;
    sum += v;
    ++count;
  }
  void merge(const Stat& o);
  double mean() const { return count ? static_cast<double>(sum) / static_cast<double>(count) : 0.0; }
};

// Node 0 is the start of every thread; real nodes are 1..n-1.
inline constexpr uint32_t kStartNode = 0;

struct Node {
  Signature sig;
  Stat duration;  // of the node's events
  // Time the node's events add to their thread's busy time: the part of each
  // event after the end of every earlier event of the thread, so an event
  // inside another (an application region around its reads) is counted once.
  // Busy time plus the gaps of a thread's transitions is exactly its span.
  int64_t busy_ns = 0;
};

struct Edge {
  uint64_t count = 0;
  Stat gap;       // end of the source event to start of the destination
  Stat duration;  // of the destination event taken through this edge
};

using EdgeKey = std::pair<uint32_t, uint32_t>;

// The arrivals at each node of one thread, in order, as runs of the node
// they came from: `count` arrivals at `node` from `from`, until the next run
// of `node`. A loop's header runs tell each entry's trip count exactly
// (loops.cc). Loop-shaped programs need a few runs per outer iteration.
struct ArrivalRun {
  uint32_t node = kStartNode;
  uint32_t from = kStartNode;
  uint32_t count = 0;  // a longer run continues in a new one
};
struct ArrivalLog {  // one thread's runs, in the order they started
  std::vector<ArrivalRun> runs;
};
// Beyond this many runs in one graph the builder stops logging a thread (its
// log is dropped whole); loops it entered then show totals, not per-entry trips.
inline constexpr uint64_t kMaxArrivalRuns = uint64_t{1} << 16;

// The graph of one process (or of a merge of processes).
struct Graph {
  std::vector<Node> nodes;  // nodes[0] is the start node
  std::map<EdgeKey, Edge> edges;
  uint64_t events = 0;
  uint64_t threads = 0;
  int64_t span_ns = 0;  // sum over threads of first event start to last event end
  std::vector<ArrivalLog> arrivals;  // per thread and node; whole threads only
  uint64_t arrival_runs = 0;         // runs in `arrivals` (and in threads still being built)

  Graph();
  uint32_t intern(const Signature& sig);
  // Adds o's nodes and edges (nodes matched by signature).
  void merge(const Graph& o);
  // True when nodes (in order) and edge counts are equal: timings may differ.
  bool same_structure(const Graph& o) const;
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> successors() const;

 private:
  void merge_arrivals(const Graph& o, const std::vector<uint32_t>& remap);
  // Signature -> node id. Hashed: a job's graphs are merged process by
  // process, each node looked up again, and ordered compares of four
  // strings were most of a merge.
  std::unordered_map<Signature, uint32_t, SignatureHash> index_;
};

// Directory part of a path ("/data/train/a.bin" -> "/data/train"; "a" -> ".").
std::string directory_of(std::string_view path);

}  // namespace strata::efg
