#include "efg/graph.h"

#include <algorithm>
#include <bit>


namespace strata::efg {

bool parse_file_class(const std::string& text, FileClass* out) {
  if (text == "dir" || text == "directory") *out = FileClass::kDirectory;
  else if (text == "path") *out = FileClass::kPath;
  else if (text == "any") *out = FileClass::kAny;
  else return false;
  return true;
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
  if (!s.role.empty()) out += " " + s.role;
  return out;
}

std::string directory_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

void Stat::merge(const Stat& o) {
  if (o.count == 0) return;
  if (count == 0 || o.min < min) min = o.min;
  if (count == 0 || o.max > max) max = o.max;
  sum += o.sum;
  count += o.count;
}

Graph::Graph() {
  nodes.push_back(Node{Signature{"", "start", "", -1, ""}, {}});
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
    nodes[remap[i]].busy_ns += o.nodes[i].busy_ns;
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
  merge_arrivals(o, remap);
}

void Graph::merge_arrivals(const Graph& o, const std::vector<uint32_t>& remap) {
  if (arrival_runs + o.arrival_runs > kMaxArrivalRuns) {
    // Over budget: no per-entry trips for this graph rather than wrong ones
    // (loops.cc checks the logs against the entry counts).
    arrivals.clear();
    arrival_runs = 0;
    return;
  }
  for (const ArrivalLog& log : o.arrivals) {
    ArrivalLog& mine = arrivals.emplace_back();
    mine.runs = log.runs;
    for (ArrivalRun& r : mine.runs) {
      r.node = remap[r.node];
      r.from = remap[r.from];
    }
  }
  arrival_runs += o.arrival_runs;
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

}  // namespace strata::efg
