// `strata efg` end to end: a real C program with known nested loops traced
// by `strata run`, the graph drawn with graphviz, a DFTracer sample, bad input.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <filesystem>
#include <cctype>
#include <fstream>
#include <string>
#include <vector>

#include "../common/process.h"

namespace {

const std::string kStrata = STRATA_BIN;
const std::string kProgram = EPOCH_LOOPS;

using strata_test::run;
using strata_test::RunResult;

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.code) + (r.timed_out ? " (timed out)" : "") + "\nstdout:\n" +
         r.out.substr(0, 4000) + "\nstderr:\n" + r.err.substr(0, 4000);
}

class Dir : public strata_test::TempDir {
 public:
  Dir() : strata_test::TempDir("strata-efg", {"train", "ckpt"}) {}
};

// Traces epoch_loops DIR EPOCHS STEPS into DIR/trace.
void trace_epochs(const Dir& d, int epochs, int steps) {
  mkdir((d.path() + "/train").c_str(), 0755);
  mkdir((d.path() + "/ckpt").c_str(), 0755);
  for (int s = 0; s < steps; ++s)
    strata_test::write_text(d.path() + "/train/sample_" + std::to_string(s), std::string(12288, 'x'));
  RunResult r = run({kStrata, "run", "-q", "-o", d.path() + "/trace", "--", kProgram, d.path(),
                     std::to_string(epochs), std::to_string(steps)}, 120);
  ASSERT_EQ(r.code, 0) << describe(r);
}

struct Json {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  std::string text;
};

std::unique_ptr<Json> efg_json(const std::string& trace, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {kStrata, "efg", trace, "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunResult r = run(argv, 120);
  EXPECT_EQ(r.code, 0) << describe(r);
  auto j = std::make_unique<Json>();
  j->text = r.out;
  auto res = j->parser.parse(j->text);
  if (res.error()) throw std::runtime_error("bad JSON from strata efg: " + r.out.substr(0, 500));
  j->root = res.value();
  return j;
}

int64_t I(simdjson::dom::element e, const char* key) {
  int64_t v = 0;
  EXPECT_FALSE(e[key].get(v)) << "no integer " << key;
  return v;
}

std::string S(simdjson::dom::element e, const char* key) {
  std::string_view v;
  EXPECT_FALSE(e[key].get(v)) << "no string " << key;
  return std::string(v);
}

simdjson::dom::element node(simdjson::dom::element proc, int64_t id) {
  for (simdjson::dom::element n : proc["nodes"].get_array())
    if (I(n, "id") == id) return n;
  throw std::runtime_error("no node " + std::to_string(id));
}

// The process whose graph has the most events (the traced program, not `strata`'s helpers).
simdjson::dom::element busiest(simdjson::dom::element root) {
  simdjson::dom::element best;
  int64_t most = -1;
  for (simdjson::dom::element p : root["processes"].get_array())
    if (I(p, "events") > most) {
      most = I(p, "events");
      best = p;
    }
  return best;
}

TEST(EfgE2E, TracedProgramGivesExactNestedLoops) {
  Dir d;
  trace_epochs(d, 5, 40);
  auto j = efg_json(d.path() + "/trace");
  simdjson::dom::element p = busiest(j->root);
  // Every file event, plus the process's exit (a PROC event outside the loops).
  ASSERT_EQ(I(p, "events"), 5 * (40 * 5 + 3) + 1);
  EXPECT_EQ(p["nodes"].get_array().size(), 7u);
  simdjson::dom::array loops = p["loops"].get_array();
  ASSERT_EQ(loops.size(), 1u);
  simdjson::dom::element epoch = loops.at(0);
  EXPECT_EQ(I(p, "main_loop"), I(epoch, "id"));
  EXPECT_EQ(I(epoch, "entries"), 1);
  EXPECT_EQ(I(epoch, "iterations"), 5);
  EXPECT_EQ(I(epoch, "body_nodes"), 6);
  EXPECT_EQ(I(epoch, "events"), 5 * 203);
  EXPECT_EQ(S(node(p, I(epoch, "header")), "function").substr(0, 4), "open");
  simdjson::dom::array inner = epoch["loops"].get_array();
  ASSERT_EQ(inner.size(), 1u);
  simdjson::dom::element step = inner.at(0);
  EXPECT_EQ(I(step, "header"), I(epoch, "header"));
  EXPECT_EQ(I(step, "entries"), 5);
  EXPECT_EQ(I(step, "iterations"), 200);
  EXPECT_EQ(I(step, "body_nodes"), 3);
  simdjson::dom::array reads = step["loops"].get_array();
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(S(node(p, I(reads.at(0), "header")), "function"), "read");
  EXPECT_EQ(S(node(p, I(reads.at(0), "header")), "size_class"), "4KiB-8KiB");
  EXPECT_EQ(I(reads.at(0), "entries"), 200);
  EXPECT_EQ(I(reads.at(0), "iterations"), 600);
  EXPECT_EQ(reads.at(0)["loops"].get_array().size(), 0u);
  double share = 0;
  ASSERT_FALSE(epoch["time_share"].get(share));
  EXPECT_GT(share, 0.0);
  EXPECT_LE(share, 1.0);
  const std::string open = S(node(p, I(epoch, "header")), "function");
  EXPECT_EQ(S(p, "structure"), "loop x5 { loop x40 { " + open + "@train read x3 close@train } " + open +
                                   "@ckpt write close@ckpt }");
}

// strata analyze runs the same graph as a pass: its structure section shows
// the main loop of each distinct process graph, equal to strata efg's.
TEST(EfgE2E, AnalyzeShowsTheMainLoop) {
  Dir d;
  trace_epochs(d, 5, 40);
  auto j = efg_json(d.path() + "/trace");
  simdjson::dom::element p = busiest(j->root);
  const std::string open = S(node(p, I(p["loops"].get_array().at(0), "header")), "function");
  const std::string expected =
      "loop x5 { loop x40 { " + open + "@train read x3 close@train } " + open + "@ckpt write close@ckpt }";
  RunResult text = run({kStrata, "analyze", "--all", d.path() + "/trace"}, 120);  // lines uncut
  ASSERT_EQ(text.code, 0) << describe(text);
  const size_t section = text.out.find("\nStructure (strata efg): ");
  ASSERT_NE(section, std::string::npos) << text.out;
  // The report wraps lines past 100 columns, continued 5 columns deeper.
  std::string joined = text.out;
  for (size_t w; (w = joined.find("\n     ")) != std::string::npos;) joined.replace(w, 6, " ");
  const std::string line = "main loop of pid " + std::to_string(I(p, "pid"));
  const size_t at = joined.find(line, joined.find("\nStructure ("));
  ASSERT_NE(at, std::string::npos) << text.out;
  const std::string shown = joined.substr(at, joined.find('\n', at) - at);
  EXPECT_EQ(shown.substr(shown.size() - expected.size() - 2), ": " + expected) << shown;

  RunResult js = run({kStrata, "analyze", "--json", d.path() + "/trace"}, 120);
  ASSERT_EQ(js.code, 0) << describe(js);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(js.out);
  simdjson::dom::array groups = root["structure"].get_array();
  ASSERT_EQ(groups.size(), j->root["processes"].get_array().size());
  bool found = false;
  for (simdjson::dom::element g : groups) {
    if (I(g, "events") != 5 * 203 + 1) continue;
    found = true;
    EXPECT_EQ(I(g, "nodes"), 7);
    EXPECT_EQ(S(g, "structure"), S(p, "structure"));
    simdjson::dom::element m = g["main_loop"];
    EXPECT_EQ(S(m, "structure"), expected);
    EXPECT_EQ(I(m, "entries"), 1);
    EXPECT_EQ(I(m, "iterations"), 5);
    EXPECT_EQ(S(m, "header").substr(0, 6 + open.size()), "POSIX " + open);
  }
  EXPECT_TRUE(found) << js.out.substr(0, 4000);
}

TEST(EfgE2E, FileClassAnyMergesDataAndCheckpointFiles) {
  Dir d;
  trace_epochs(d, 2, 3);
  auto j = efg_json(d.path() + "/trace", {"--file-class", "any", "--no-size-classes"});
  simdjson::dom::element p = busiest(j->root);
  EXPECT_EQ(I(p, "events"), 2 * (3 * 5 + 3) + 1);
  EXPECT_EQ(p["nodes"].get_array().size(), 5u);  // open, read, close, write, exit
}

TEST(EfgE2E, TextDotAndSvg) {
  Dir d;
  trace_epochs(d, 2, 4);
  const std::string dot = d.path() + "/g.dot", svg = d.path() + "/g.svg";
  const int64_t pid = I(busiest(efg_json(d.path() + "/trace")->root), "pid");
  RunResult r = run({kStrata, "efg", d.path() + "/trace", "--dot", dot, "--svg", svg, "--pid", std::to_string(pid)}, 120);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("structure: loop x2 { loop x4 {"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<- main loop"), std::string::npos) << r.out;
  const std::string dot_text = strata_test::read_text(dot);
  EXPECT_EQ(dot_text.substr(0, 13), "digraph efg {");
  EXPECT_NE(dot_text.find("subgraph cluster_"), std::string::npos);
  EXPECT_NE(dot_text.find("label=\"loop x4 (8 iterations)\""), std::string::npos) << dot_text;
  const std::string svg_text = strata_test::read_text(svg);
  EXPECT_NE(svg_text.find("<svg"), std::string::npos);
  EXPECT_NE(svg_text.find("loop x2"), std::string::npos);
}

TEST(EfgE2E, SvgWithoutGraphvizIsAClearError) {
  Dir d;
  trace_epochs(d, 1, 2);
  const std::string svg = d.path() + "/g.svg";
  RunResult r = run({kStrata, "efg", d.path() + "/trace", "--svg", svg}, 60, {"PATH=" + d.path()});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("--svg needs graphviz's `dot` program"), std::string::npos) << r.err;
  struct stat st;
  EXPECT_NE(stat(svg.c_str(), &st), 0);
}

TEST(EfgE2E, DftracerSample) {
  auto j = efg_json(std::string(STRATA_SAMPLES_DIR) + "/probe-probe-4989-preload.pfw");
  simdjson::dom::array procs = j->root["processes"].get_array();
  ASSERT_GE(procs.size(), 1u);
  int64_t events = 0, edges_out = 0;
  for (simdjson::dom::element p : procs) {
    events += I(p, "events") * static_cast<int64_t>(p["pids"].get_array().size());
    for (simdjson::dom::element e : p["edges"].get_array()) edges_out += I(e, "count");
  }
  EXPECT_EQ(I(j->root["job"], "events"), events);
  EXPECT_GT(events, 0);
  // Every event is reached by exactly one transition (from the start or its predecessor).
  int64_t job_edges = 0;
  for (simdjson::dom::element e : j->root["job"]["edges"].get_array()) job_edges += I(e, "count");
  EXPECT_EQ(job_edges, events);
}

// Units read in parallel merge in unit order: the output does not depend on threads.
TEST(EfgE2E, ThreadsGiveIdenticalOutput) {
  const std::string dir = STRATA_SAMPLES_DIR;  // two units (.pfw, .pfw.gz), three processes
  RunResult one = run({kStrata, "efg", dir, "--json", "--threads", "1"}, 120);
  RunResult two = run({kStrata, "efg", dir, "--json", "--threads", "2"}, 120);
  ASSERT_EQ(one.code, 0) << describe(one);
  ASSERT_EQ(two.code, 0) << describe(two);
  EXPECT_EQ(one.out, two.out);
  EXPECT_NE(one.out.find("\"pid\":5032"), std::string::npos);
}

// bench-bench-5032: open, pread x16404, close, then open/close twice.
TEST(EfgE2E, DftracerGzipSampleHasKnownLoops) {
  auto j = efg_json(std::string(STRATA_SAMPLES_DIR) + "/bench-bench-5032-preload.pfw.gz");
  simdjson::dom::array procs = j->root["processes"].get_array();
  ASSERT_EQ(procs.size(), 1u);
  simdjson::dom::element p = procs.at(0);
  EXPECT_EQ(I(p, "events"), 16410);
  EXPECT_EQ(S(p, "structure"), "loop x3 { open pread x16404 close }");
  simdjson::dom::element outer = p["loops"].get_array().at(0);
  EXPECT_EQ(I(outer, "entries"), 1);
  EXPECT_EQ(I(outer, "iterations"), 3);
  simdjson::dom::element preads = outer["loops"].get_array().at(0);
  EXPECT_EQ(I(preads, "entries"), 1);
  EXPECT_EQ(I(preads, "iterations"), 16404);
}

TEST(EfgE2E, BadInputNamesTheFile) {
  Dir d;
  const std::string bogus = d.path() + "/not-a-trace.strata";
  strata_test::write_text(bogus, "this is not a trace\n");
  RunResult r = run({kStrata, "efg", bogus}, 60);
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(r.err.find(bogus), std::string::npos) << r.err;
  RunResult fc = run({kStrata, "efg", bogus, "--file-class", "nope"}, 60);
  EXPECT_EQ(fc.code, 2) << describe(fc);
  EXPECT_NE(fc.err.find("--file-class nope"), std::string::npos) << fc.err;
}


// --compress on a real traced program: every reader sees the same events.
uint64_t trace_bytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".strata") n += std::filesystem::file_size(e.path());
  return n;
}

TEST(EfgE2E, CompressIsLosslessForEveryReader) {
  Dir d;
  trace_epochs(d, 5, 40);
  const std::string trace = d.path() + "/trace", small = d.path() + "/small", seq = d.path() + "/seq";
  RunResult c = run({kStrata, "efg", trace, "--compress", "-o", small}, 120);
  ASSERT_EQ(c.code, 0) << describe(c);
  EXPECT_NE(c.err.find("strata efg: wrote " + small + " (1 file, 1016 events)"), std::string::npos) << c.err;
  EXPECT_LE(trace_bytes(small), trace_bytes(trace));
  auto same = [&](std::vector<std::string> args) {
    std::vector<std::string> a = {kStrata}, b = {kStrata};
    for (auto& x : args) a.push_back(x == "T" ? trace : x), b.push_back(x == "T" ? small : x);
    RunResult ra = run(a, 120), rb = run(b, 120);
    ASSERT_EQ(ra.code, 0) << describe(ra);
    ASSERT_EQ(rb.code, 0) << describe(rb);
    ASSERT_GT(ra.out.size(), 100u);
    // analyze names its input; everything else must match byte for byte.
    std::string b_out = rb.out;
    for (size_t k; (k = b_out.find(small)) != std::string::npos;) b_out.replace(k, small.size(), trace);
    EXPECT_EQ(ra.out, b_out) << args[0];
  };
  same({"cat", "T"});
  same({"efg", "T", "--json"});
  same({"convert", "T", "--to", "chrome", "-o", "-"});
  same({"analyze", "T", "--json"});

  RunResult n = run({kStrata, "efg", trace, "--compress", "--no-times", "-o", seq}, 120);
  ASSERT_EQ(n.code, 0) << describe(n);
  EXPECT_NE(n.err.find("times dropped"), std::string::npos) << n.err;
  // Without the two time columns, smaller than with them. (Not a ratio to the
  // traced file: its size moves with the run's timings, ~4.4-4.9 KB here.)
  EXPECT_LT(trace_bytes(seq), trace_bytes(small)) << trace_bytes(seq) << " " << trace_bytes(small) << " " << trace_bytes(trace);
  // Order and arguments stay: the same loops, and cat differs only in times.
  auto j = efg_json(seq);
  EXPECT_EQ(std::string(j->root["processes"].at(0)["structure"].get_string().value()),
            "loop x5 { loop x40 { open@train read x3 close@train } open@ckpt write close@ckpt }");
  RunResult ca = run({kStrata, "cat", trace}, 120), cb = run({kStrata, "cat", seq}, 120);
  auto strip = [](const std::string& s) {  // drops "ts":N,"dur":N
    std::string out;
    auto digits = [&](size_t i) {
      while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '-')) ++i;
      return i;
    };
    for (size_t i = 0; i < s.size();) {
      const size_t k = s.find("\"ts\":", i);
      if (k == std::string::npos) {
        out += s.substr(i);
        break;
      }
      out += s.substr(i, k - i);
      i = digits(k + 5);
      if (s.compare(i, 7, ",\"dur\":") == 0) i = digits(i + 7);
    }
    return out;
  };
  EXPECT_EQ(strip(ca.out), strip(cb.out));
}

TEST(EfgE2E, CompressOptionsAndErrors) {
  Dir d;
  RunResult r = run({kStrata, "efg", d.path(), "--compress"}, 30);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--compress requires --output"), std::string::npos) << r.err;
  r = run({kStrata, "efg", d.path() + "/none", "--compress", "-o", d.path() + "/out"}, 30);
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(r.err.find(d.path() + "/none: no such file or directory"), std::string::npos) << r.err;
}

}  // namespace
