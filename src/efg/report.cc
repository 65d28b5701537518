#include "efg/report.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>

#include "format/json_escape.h"

namespace strata::efg {

namespace {

const char* file_class_name(FileClass c) {
  switch (c) {
    case FileClass::kPath: return "path";
    case FileClass::kAny: return "any";
    default: return "directory";
  }
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string duration_text(double ns) {
  if (ns < 1e3) return fmt("%.0fns", ns);
  if (ns < 1e6) return fmt("%.1fus", ns / 1e3);
  if (ns < 1e9) return fmt("%.1fms", ns / 1e6);
  return fmt("%.2fs", ns / 1e9);
}

// Short node names for the structure line: the function, plus the last part
// of the file class and the size class when another node has the same
// function, plus the role ("@loader1") when the name is still not unique.
std::vector<std::string> short_names(const Graph& g) {
  std::map<std::string, int> uses;
  for (size_t v = 1; v < g.nodes.size(); ++v) ++uses[g.nodes[v].sig.function];
  std::vector<std::string> names(g.nodes.size());
  for (size_t v = 1; v < g.nodes.size(); ++v) {
    const Signature& s = g.nodes[v].sig;
    names[v] = s.function;
    if (uses[s.function] > 1 && !s.file.empty()) {
      const size_t slash = s.file.rfind('/');
      names[v] += "@" + (slash == std::string::npos || slash + 1 == s.file.size() ? s.file : s.file.substr(slash + 1));
    }
    if (uses[s.function] > 1 && s.size_class >= 0) names[v] += "[" + size_class_label(s.size_class) + ")";
  }
  std::map<std::string, int> name_uses;
  for (size_t v = 1; v < g.nodes.size(); ++v) ++name_uses[names[v]];
  for (size_t v = 1; v < g.nodes.size(); ++v) {
    const std::string& role = g.nodes[v].sig.role;
    if (name_uses[names[v]] > 1 && !role.empty()) {  // "loader=1" -> "@loader1"
      names[v] += "@";
      for (char c : role)
        if (c != '=') names[v] += c;
    }
  }
  return names;
}

// "x40" (every entry made 40 trips), "x6-7" (fewest and most trips in one
// entry), or "x13/2" (13 trips in 2 entries, per-entry counts unknown).
std::string trips_text(const Loop& L) {
  if (L.trips_known && L.trips_min == L.trips_max) return "x" + std::to_string(L.trips_min);
  if (L.trips_known) return "x" + std::to_string(L.trips_min) + "-" + std::to_string(L.trips_max);
  if (L.entries == 0) return "x" + std::to_string(L.iterations);
  return "x" + std::to_string(L.iterations) + "/" + std::to_string(L.entries);
}

// A loop's items in first-seen order: its own nodes (v) and nested loops (~c).
std::vector<int64_t> loop_items(const LoopForest& f, int l) {
  std::vector<std::pair<uint32_t, int64_t>> keyed;
  for (uint32_t v : f.loops[l].own) keyed.emplace_back(v, v);
  for (int c : f.loops[l].children) keyed.emplace_back(f.loops[c].header, ~static_cast<int64_t>(c));
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;  // nested loop first on a shared header
  });
  std::vector<int64_t> items;
  for (const auto& k : keyed) items.push_back(k.second);
  return items;
}

void append_json_stat(std::string& o, const char* key, const Stat& s) {
  o += "\"";
  o += key;
  o += "\":{\"count\":" + std::to_string(s.count) + ",\"sum\":" + std::to_string(s.sum) +
       ",\"min\":" + std::to_string(s.min) + ",\"max\":" + std::to_string(s.max) + "}";
}

}  // namespace

Report make_report(const Builder& b) {
  Report r;
  r.file_class = b.options().file_class;
  for (const auto& [pid, g] : b.processes()) {
    if (g.events == 0) continue;
    r.job.merge(g);
    auto same = std::find_if(r.groups.begin(), r.groups.end(),
                             [&graph = g](const ProcessGroup& pg) { return pg.graph.same_structure(graph); });
    if (same == r.groups.end()) {
      ProcessGroup pg;
      pg.pids.push_back(pid);
      auto meta = b.metas().find(pid);
      if (meta != b.metas().end()) pg.exe = meta->second.exe;
      pg.graph = g;
      r.groups.push_back(std::move(pg));
    } else {
      same->pids.push_back(pid);
      same->graph.merge(g);
    }
  }
  for (ProcessGroup& pg : r.groups) pg.loops = find_loops(pg.graph);
  r.job_loops = find_loops(r.job);
  return r;
}

namespace {

// Appends the nested-loop text of top-level loop `root` to `out`.
void append_loop(std::string& out, const std::vector<std::string>& names, const LoopForest& f, int root) {
  // Iterative walk: each frame is a loop and its next item.
  struct Frame {
    std::vector<int64_t> items;
    size_t next = 0;
  };
  std::vector<Frame> stack;
  auto emit_loop_open = [&](int l) {
    const Loop& L = f.loops[l];
    if (!out.empty()) out += ' ';
    if (L.children.empty() && L.own.size() == 1) {  // a node repeating itself: "read x3"
      out += names[L.header] + " " + trips_text(L);
      return;
    }
    out += "loop " + trips_text(L) + " {";
    stack.push_back({loop_items(f, l), 0});
  };
  emit_loop_open(root);
  while (!stack.empty()) {
    Frame& fr = stack.back();
    if (fr.next == fr.items.size()) {
      out += " }";
      stack.pop_back();
      continue;
    }
    const int64_t item = fr.items[fr.next++];
    if (item >= 0) {
      out += ' ';
      out += names[item];
    } else {
      emit_loop_open(static_cast<int>(~item));
    }
  }
}

}  // namespace

std::string structure_line(const Graph& g, const LoopForest& f) {
  const std::vector<std::string> names = short_names(g);
  std::string out;
  for (int root : f.roots) append_loop(out, names, f, root);
  return out;
}

std::string loop_line(const Graph& g, const LoopForest& f, int loop) {
  std::string out;
  append_loop(out, short_names(g), f, loop);
  return out;
}

namespace {

void text_graph(std::string& o, const Graph& g, const LoopForest& f) {
  o += "  structure: " + (f.loops.empty() ? std::string("(no loops)") : structure_line(g, f)) + "\n";
  if (f.main_loop >= 0) {
    const Loop& M = f.loops[f.main_loop];
    o += "  main loop: header n" + std::to_string(M.header) + " (" + signature_label(g.nodes[M.header].sig) + "), " +
         std::to_string(M.iterations) + (M.iterations == 1 ? " iteration in " : " iterations in ") +
         std::to_string(M.entries) + (M.entries == 1 ? " entry, " : " entries, ") +
         fmt("%.1f", 100.0 * M.time_share) + "% of the time\n";
  }
  o += "  nodes:\n";
  char line[512];
  for (size_t v = 1; v < g.nodes.size(); ++v) {
    const Node& n = g.nodes[v];
    std::snprintf(line, sizeof line, "    n%-5zu %10" PRIu64 " x  mean %9s  ", v, n.duration.count,
                  duration_text(n.duration.mean()).c_str());
    o += line + signature_label(n.sig) + "\n";
  }
  o += "  edges:\n";
  for (const auto& [key, e] : g.edges) {
    std::string from = key.first == kStartNode ? "start" : "n" + std::to_string(key.first);
    std::snprintf(line, sizeof line, "    %6s -> n%-5u %10" PRIu64 " x  gap mean %9s\n", from.c_str(), key.second,
                  e.count, e.gap.count ? duration_text(e.gap.mean()).c_str() : "-");
    o += line;
  }
  o += "  loops:" + std::string(f.loops.empty() ? " none\n" : "\n");
  std::vector<int> stack(f.roots.rbegin(), f.roots.rend());
  while (!stack.empty()) {
    const int l = stack.back();
    stack.pop_back();
    const Loop& L = f.loops[l];
    const int indent = std::min(L.depth, 32);
    o += std::string(4 + 2 * indent, ' ');
    if (L.depth > indent) o += "[depth " + std::to_string(L.depth) + "] ";
    o += "loop " + trips_text(L) + ": header n" + std::to_string(L.header) + " (" +
         signature_label(g.nodes[L.header].sig) + "), entries " + std::to_string(L.entries) + ", iterations " +
         std::to_string(L.iterations) + ", " + std::to_string(L.body_nodes) + " nodes, " + std::to_string(L.events) +
         " events, " + fmt("%.1f", 100.0 * L.time_share) + "% of the time" + (L.irreducible ? ", irreducible" : "") +
         (l == f.main_loop ? "  <- main loop" : "") + "\n";
    for (auto c = L.children.rbegin(); c != L.children.rend(); ++c) stack.push_back(*c);
  }
}

}  // namespace

std::string render_text(const Report& r) {
  std::string o;
  o += "strata efg: " + std::to_string(r.job.events) + " events, " + std::to_string(r.groups.size()) +
       " distinct process graph" + (r.groups.size() == 1 ? "" : "s") + " (file class: " +
       file_class_name(r.file_class) + ")\n";
  for (const ProcessGroup& pg : r.groups) {
    o += "\nprocess " + std::to_string(pg.pids.front());
    if (pg.pids.size() > 1) o += " and " + std::to_string(pg.pids.size() - 1) + " more with the same graph";
    if (!pg.exe.empty()) o += " (" + pg.exe + ")";
    o += ": " + std::to_string(pg.graph.events) + " events, " + std::to_string(pg.graph.threads) + " thread" +
         (pg.graph.threads == 1 ? "" : "s") + ", " + std::to_string(pg.graph.nodes.size() - 1) + " nodes, " +
         std::to_string(pg.graph.edges.size()) + " edges\n";
    text_graph(o, pg.graph, pg.loops);
  }
  if (r.groups.size() > 1) {
    o += "\njob (all processes merged): " + std::to_string(r.job.nodes.size() - 1) + " nodes, " +
         std::to_string(r.job.edges.size()) + " edges\n";
    o += "  structure: " + (r.job_loops.loops.empty() ? std::string("(no loops)") : structure_line(r.job, r.job_loops)) + "\n";
  }
  return o;
}

namespace {

std::string trips_json(const Loop& L, uint64_t trips) { return L.trips_known ? std::to_string(trips) : "null"; }

void json_loops(std::string& o, const LoopForest& f) {
  // Iterative: nested arrays close as their frames pop.
  struct Frame {
    const std::vector<int>* list;
    size_t next = 0;
  };
  o += "\"loops\":[";
  std::vector<Frame> stack{{&f.roots, 0}};
  while (!stack.empty()) {
    Frame& fr = stack.back();
    if (fr.next == fr.list->size()) {
      o += "]";
      stack.pop_back();
      if (!stack.empty()) o += "}";
      continue;
    }
    if (fr.next > 0) o += ",";
    const int l = (*fr.list)[fr.next++];
    const Loop& L = f.loops[l];
    o += "{\"id\":" + std::to_string(l) + ",\"header\":" + std::to_string(L.header) + ",\"body\":[";
    for (size_t i = 0; i < L.own.size(); ++i) o += (i ? "," : "") + std::to_string(L.own[i]);
    o += "],\"body_nodes\":" + std::to_string(L.body_nodes) + ",\"entries\":" + std::to_string(L.entries) +
         ",\"iterations\":" + std::to_string(L.iterations) + ",\"trips_min\":" + trips_json(L, L.trips_min) +
         ",\"trips_max\":" + trips_json(L, L.trips_max) + ",\"back_edges\":" + std::to_string(L.back_edges) +
         ",\"events\":" + std::to_string(L.events) + ",\"time_ns\":" + std::to_string(L.time_ns) +
         ",\"time_share\":" + fmt("%.6f", L.time_share) + ",\"depth\":" + std::to_string(L.depth) +
         ",\"irreducible\":" + (L.irreducible ? "true" : "false") + ",\"loops\":[";
    stack.push_back({&L.children, 0});
  }
}

void json_graph(std::string& o, const Graph& g, const LoopForest& f) {
  o += "\"events\":" + std::to_string(g.events) + ",\"threads\":" + std::to_string(g.threads) +
       ",\"span_ns\":" + std::to_string(g.span_ns) + ",\"nodes\":[";
  for (size_t v = 1; v < g.nodes.size(); ++v) {
    const Node& n = g.nodes[v];
    if (v > 1) o += ",";
    o += "{\"id\":" + std::to_string(v) + ",\"layer\":" + json::quoted(n.sig.layer) +
         ",\"function\":" + json::quoted(n.sig.function) + ",\"file\":" + json::quoted(n.sig.file) +
         ",\"size_class\":" + json::quoted(size_class_label(n.sig.size_class)) +
         ",\"role\":" + json::quoted(n.sig.role) +
         ",\"label\":" + json::quoted(signature_label(n.sig)) + ",\"count\":" + std::to_string(n.duration.count) +
         ",\"busy_ns\":" + std::to_string(n.busy_ns) + ",";
    append_json_stat(o, "dur_ns", n.duration);
    o += "}";
  }
  o += "],\"edges\":[";
  bool first = true;
  for (const auto& [key, e] : g.edges) {
    if (!first) o += ",";
    first = false;
    o += "{\"from\":" + std::to_string(key.first) + ",\"to\":" + std::to_string(key.second) +
         ",\"count\":" + std::to_string(e.count) + ",";
    append_json_stat(o, "gap_ns", e.gap);
    o += ",";
    append_json_stat(o, "dur_ns", e.duration);
    o += "}";
  }
  o += "],";
  json_loops(o, f);
  o += ",\"main_loop\":" + std::to_string(f.main_loop) +
       ",\"structure\":" + json::quoted(f.loops.empty() ? std::string() : structure_line(g, f));
}

}  // namespace

std::string render_json(const Report& r) {
  std::string o = "{\"file_class\":\"" + std::string(file_class_name(r.file_class)) + "\",\"processes\":[";
  for (size_t i = 0; i < r.groups.size(); ++i) {
    const ProcessGroup& pg = r.groups[i];
    if (i) o += ",";
    o += "{\"pid\":" + std::to_string(pg.pids.front()) + ",\"pids\":[";
    for (size_t p = 0; p < pg.pids.size(); ++p) o += (p ? "," : "") + std::to_string(pg.pids[p]);
    o += "],\"exe\":" + json::quoted(pg.exe) + ",";
    json_graph(o, pg.graph, pg.loops);
    o += "}";
  }
  o += "],\"job\":{";
  json_graph(o, r.job, r.job_loops);
  o += "}}\n";
  return o;
}

std::string render_dot(const Report& r, int group) {
  const Graph& g = group < 0 ? r.job : r.groups[group].graph;
  const LoopForest& f = group < 0 ? r.job_loops : r.groups[group].loops;
  std::string o = "digraph efg {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n";
  o += "  n0 [label=\"start\", shape=circle];\n";
  auto node_line = [&](uint32_t v, const std::string& indent) {
    const Node& n = g.nodes[v];
    o += indent + "n" + std::to_string(v) + " [label=" +
         json::quoted(signature_label(n.sig) + "\\nx" + std::to_string(n.duration.count)) + "];\n";
  };
  for (size_t v = 1; v < g.nodes.size(); ++v)
    if (f.node_loop[v] < 0) node_line(static_cast<uint32_t>(v), "  ");
  struct Frame {
    const std::vector<int>* list;
    size_t next = 0;
  };
  std::vector<Frame> stack{{&f.roots, 0}};
  while (!stack.empty()) {
    Frame& fr = stack.back();
    if (fr.next == fr.list->size()) {
      stack.pop_back();
      if (!stack.empty()) o += "  }\n";
      continue;
    }
    const int l = (*fr.list)[fr.next++];
    const Loop& L = f.loops[l];
    o += "  subgraph cluster_" + std::to_string(l) + " {\n    label=" +
         json::quoted("loop " + trips_text(L) + " (" + std::to_string(L.iterations) + " iterations)") +
         "; style=rounded;\n";
    for (uint32_t v : L.own) node_line(v, "    ");
    stack.push_back({&L.children, 0});
  }
  uint64_t top = 1;
  for (const auto& [key, e] : g.edges) top = std::max(top, e.count);
  for (const auto& [key, e] : g.edges) {
    const double width = 1.0 + 5.0 * std::log1p(static_cast<double>(e.count)) / std::log1p(static_cast<double>(top));
    o += "  n" + std::to_string(key.first) + " -> n" + std::to_string(key.second) + " [label=\"" +
         std::to_string(e.count) + "\", penwidth=" + fmt("%.2f", width) + "];\n";
  }
  o += "}\n";
  return o;
}

}  // namespace strata::efg
