// Round trips (native -> Chrome JSON, native -> DFTracer pfw.gz) keep every
// event and argument; corrupt, truncated, empty and foreign files give a clear
// error naming the file (and block), exit code 2, never a crash; a file cut
// inside its last block still yields every earlier block.
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "format/format.h"
#include "harness.h"

using namespace core_test;
namespace fmtf = strata::format;

namespace {

// One trace with several processes, tags, app events, errno paths: the
// workload (-O2) and the context-tags program, run by one shell.
struct SourceTrace {
  std::unique_ptr<TempDir> tmp;
  std::string trace;
  std::vector<Event> events;
  Info info;
};

const SourceTrace& source() {
  static std::unique_ptr<SourceTrace> s;
  if (s) return *s;
  s = std::make_unique<SourceTrace>();
  s->tmp = std::make_unique<TempDir>();
  std::string work = s->tmp->mkdir("work");
  std::string f = s->tmp->sub("f");
  write_text(f, std::string(8192, 'r'));
  s->trace = s->tmp->sub("trace");
  RunResult r = strata_run(s->trace, {"/bin/sh", "-c", std::string(WORKLOAD_O2) + " " + work + " && " + TAGS_BIN + " " + f});
  EXPECT_EQ(r.code, 0) << r.err;
  s->events = cat_trace(s->trace);
  s->info = info_trace(s->trace);
  return *s;
}

std::string gunzip(const std::string& path) {
  gzFile g = gzopen(path.c_str(), "rb");
  if (!g) return "";
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(g, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(g);
  return out;
}

std::string arg_text(simdjson::dom::object args, const char* key, bool& present) {
  simdjson::dom::element v;
  present = !args[key].get(v);
  return present ? json_value_text(v) : "";
}

void expect_arg(simdjson::dom::object args, const char* key, bool want_present, int64_t want, const Event& e) {
  bool present = false;
  std::string text = arg_text(args, key, present);
  EXPECT_EQ(present, want_present) << key << " of " << describe(e);
  if (present && want_present) { EXPECT_EQ(text, std::to_string(want)) << key << " of " << describe(e); }
}

// docs/configuration.md: a `-o` name ending in .gz is gzip-compressed, for
// every output format; the text inside is what the plain file holds.
TEST(RoundTrip, ChromeOutputNamedGzIsCompressed) {
  const auto& src = source();
  TempDir tmp;
  const std::string plain = tmp.sub("t.json"), gz = tmp.sub("t.json.gz");
  ASSERT_EQ(run({kStrata, "convert", src.trace, "--to", "chrome", "-o", plain}).code, 0);
  RunResult r = run({kStrata, "convert", src.trace, "--to", "chrome", "-o", gz});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string bytes = read_text(gz);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  EXPECT_EQ(gunzip(gz), read_text(plain));
}

TEST(RoundTrip, ChromeKeepsEveryEventAndArgument) {
  const auto& src = source();
  ASSERT_GT(src.events.size(), 150u);
  TempDir tmp;
  std::string out = tmp.sub("t.json");
  RunResult r = run({kStrata, "convert", src.trace, "--to", "chrome", "-o", out});
  ASSERT_EQ(r.code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  auto json = simdjson::padded_string::load(out);
  ASSERT_FALSE(json.error());
  ASSERT_FALSE(parser.parse(json.value()).get(doc)) << "not valid JSON";
  simdjson::dom::array events;
  ASSERT_FALSE(doc["traceEvents"].get(events));
  size_t i = 0, process_names = 0, thread_names = 0;
  for (simdjson::dom::object o : events) {
    std::string_view ph = o["ph"];
    if (ph == "M") {
      std::string_view name = o["name"];
      if (name == "process_name") ++process_names;
      if (name == "thread_name" && std::string_view(o["args"]["name"]) == "untagged-reader") ++thread_names;
      continue;
    }
    if (i >= src.events.size()) {
      ++i;
      continue;
    }
    const Event& e = src.events[i++];
    SCOPED_TRACE(describe(e));
    EXPECT_EQ(std::string_view(o["name"]), e.name);
    EXPECT_EQ(std::string_view(o["cat"]), e.cat);
    EXPECT_EQ(as_i64(o["pid"]), e.pid);
    EXPECT_EQ(as_i64(o["tid"]), e.tid);
    double ts_us = o["ts"].get_double().value_unsafe();
    EXPECT_LE(std::fabs(ts_us * 1000.0 - static_cast<double>(e.ts)), 1.0);
    if (ph == "C") continue;  // counter: args hold {name: value}
    simdjson::dom::object args;
    ASSERT_FALSE(o["args"].get(args));
    bool present = false;
    std::string path = arg_text(args, "path", present);
    EXPECT_EQ(present, e.has_path);
    if (present) { EXPECT_EQ(path, "\"" + e.path + "\""); }
    expect_arg(args, "fd", e.has_fd, e.fd, e);
    expect_arg(args, "offset", e.has_offset, e.offset, e);
    expect_arg(args, "size", e.has_size, e.size, e);
    expect_arg(args, "ret", e.has_ret, e.ret, e);
    expect_arg(args, "errno", e.has_errno, e.err, e);
    simdjson::dom::object tags;
    bool has_tags = !args["tags"].get(tags);
    EXPECT_EQ(has_tags, !e.tags.empty());
    if (has_tags) {
      std::map<std::string, std::string> got;
      for (auto [k, v] : tags) got[std::string(k)] = json_value_text(v);
      EXPECT_EQ(got, e.tags);
    }
    if (ph == "X") { EXPECT_LE(std::fabs(o["dur"].get_double().value_unsafe() * 1000.0 - static_cast<double>(e.dur)), 1.0); }
  }
  EXPECT_EQ(i, src.events.size()) << "every event once, in the order cat prints them";
  EXPECT_EQ(static_cast<int64_t>(process_names), src.info.processes);
  EXPECT_EQ(thread_names, 1u);
}

TEST(RoundTrip, PfwKeepsEveryEventAndArgument) {
  const auto& src = source();
  TempDir tmp;
  std::string out = tmp.sub("t.pfw.gz");
  RunResult r = run({kStrata, "convert", src.trace, "--to", "pfw", "-o", out});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string text = gunzip(out);
  ASSERT_FALSE(text.empty()) << "not gzip";
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "[");
  simdjson::dom::parser parser;
  std::map<uint64_t, std::string> files;  // FH: hash -> path
  std::map<std::string, int64_t> per_name;
  size_t i = 0, hh = 0, sh = 0;
  bool closed = false;
  while (std::getline(in, line)) {
    if (line == "]") {
      closed = true;
      continue;
    }
    ASSERT_FALSE(closed) << "line after ]";
    simdjson::padded_string ps(line);
    simdjson::dom::object o;
    ASSERT_FALSE(parser.parse(ps).get(o)) << line;
    std::string_view name = o["name"];
    std::string_view ph;
    if (!o["ph"].get(ph) && ph == "M") {
      simdjson::dom::object args = o["args"];
      std::string value_name{std::string_view(args["name"])};
      uint64_t value = args["value"];
      EXPECT_EQ(value, XXH3_64bits(value_name.data(), value_name.size())) << line;
      if (name == "FH") files[value] = value_name;
      if (name == "HH") ++hh;
      if (name == "SH") ++sh;
      continue;
    }
    if (name == "start") continue;  // per-process start event
    ++per_name[std::string(name)];
    if (i >= src.events.size()) {
      ++i;
      continue;
    }
    const Event& e = src.events[i++];
    SCOPED_TRACE(describe(e));
    EXPECT_EQ(name, e.name);
    EXPECT_EQ(std::string_view(o["cat"]), e.cat);
    EXPECT_EQ(as_i64(o["pid"]), e.pid);
    EXPECT_EQ(as_i64(o["tid"]), e.tid);
    // The end is rounded to the microsecond like the start (pfw_times_test.cc
    // checks the exact values): one microsecond more than the duration
    // rounded alone, or none.
    const int64_t extra_us = as_i64(o["dur"]) - e.dur / 1000;
    EXPECT_TRUE(extra_us == 0 || extra_us == 1) << "dur " << as_i64(o["dur"]) << " us for " << e.dur << " ns";
    simdjson::dom::object args = o["args"];
    uint64_t fhash = 0;
    bool has_fhash = !args["fhash"].get(fhash);
    EXPECT_EQ(has_fhash, e.has_path);
    if (has_fhash) {
      ASSERT_TRUE(files.count(fhash)) << "fhash without an earlier FH event";
      EXPECT_EQ(files[fhash], e.path);
    }
    expect_arg(args, "fd", e.has_fd, e.fd, e);
    expect_arg(args, "offset", e.has_offset, e.offset, e);
    // The open family's size column is its mode argument: "mode" when one was given.
    const bool open_call = e.cat == "POSIX" && (e.name.rfind("open", 0) == 0 || e.name.rfind("creat", 0) == 0);
    // Lengths (ftruncate's, mmap's, ...) are "length", as DFTracer writes them.
    static const std::set<std::string> lengths = {
        "truncate", "ftruncate", "ftruncate64", "mmap", "mmap64", "munmap", "msync", "fallocate", "fallocate64",
        "posix_fallocate", "posix_fallocate64", "sync_file_range"};
    const bool length_call = e.cat == "POSIX" && lengths.count(e.name);
    const bool kept = e.cat == "PROC" && e.name == "iteration";
    expect_arg(args, "count", e.has_size && !open_call && !length_call && !kept, e.size, e);
    expect_arg(args, "mode", e.has_size && open_call && e.size > 0, e.size, e);
    expect_arg(args, "length", e.has_size && length_call, e.size, e);
    expect_arg(args, "kept", e.has_size && kept, e.size, e);
    expect_arg(args, "ret", e.has_ret, e.ret, e);
    expect_arg(args, "errno", e.has_errno, e.err, e);
    for (auto& [k, v] : e.tags) {
      bool present = false;
      EXPECT_EQ(arg_text(args, k.c_str(), present), v) << "tag " << k;
      EXPECT_TRUE(present) << "tag " << k;
    }
  }
  EXPECT_TRUE(closed);
  EXPECT_EQ(i, src.events.size());
  EXPECT_EQ(per_name, src.info.by_name) << "per-name counts of the pfw file vs strata info";
  EXPECT_EQ(static_cast<int64_t>(hh), src.info.processes);
  EXPECT_EQ(static_cast<int64_t>(sh), src.info.processes);
}

// Converts `trace` to pfw `version` and calls on_record(name, args) for each
// record that has args (a test failure, not a skip, for a line that does not parse).
template <class OnRecord>
void for_each_pfw_record(TempDir& tmp, const std::string& trace, const char* version, OnRecord on_record) {
  const std::string out = tmp.sub(std::string("v") + version + ".pfw");
  RunResult c = run({kStrata, "convert", trace, "--to", "pfw", "--pfw-version", version, "-o", out});
  ASSERT_EQ(c.code, 0) << c.err;
  std::ifstream in(out);
  std::string line;
  simdjson::dom::parser parser;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '{') continue;
    simdjson::padded_string ps(line);
    simdjson::dom::object o;
    ASSERT_FALSE(parser.parse(ps).get(o)) << line;
    simdjson::dom::object args;
    if (!o["args"].get(args)) on_record(std::string(std::string_view(o["name"])), args);
  }
}

// DFTracer writes an open's mode argument (given with O_CREAT) as "mode" in
// args; "count" is a byte count. A real program's open(path, O_CREAT, 0640)
// and its open without O_CREAT, through `--to pfw` in both versions.
TEST(Format, PfwOpenModeIsDftracerMode) {
  TempDir tmp;
  const std::string file = tmp.sub("created"), trace = tmp.sub("trace");
  const std::string script =
      "import os, sys\n"
      "fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o640)\n"
      "os.write(fd, b'x' * 10)\n"
      "os.close(fd)\n"
      "os.close(os.open(sys.argv[1], os.O_RDONLY))\n";
  RunResult r = strata_run(trace, {PYTHON3, "-c", script, file}, {"--no-python"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* version : {"1", "2"}) {
    SCOPED_TRACE(std::string("pfw version ") + version);
    std::set<std::string> fhashes;  // of the file, from its FH record
    std::vector<std::string> opens;  // the args of each open of the file, in order
    for_each_pfw_record(tmp, trace, version, [&](const std::string& name, simdjson::dom::object args) {
      simdjson::dom::element v;
      if (name == "FH" && std::string_view(args["name"]) == file && !args["value"].get(v))
        fhashes.insert(json_value_text(v));
      if (name.rfind("open", 0) == 0 && !args["fhash"].get(v) && fhashes.count(json_value_text(v)))
        opens.push_back(simdjson::minify(args));
    });
    ASSERT_EQ(opens.size(), 2u);
    EXPECT_NE(opens[0].find("\"mode\":416,"), std::string::npos) << opens[0];  // 0640
    EXPECT_EQ(opens[0].find("\"count\""), std::string::npos) << opens[0];
    EXPECT_EQ(opens[1].find("\"mode\""), std::string::npos) << opens[1];
    EXPECT_EQ(opens[1].find("\"count\""), std::string::npos) << opens[1];
  }
}

// ftruncate's new length, mmap's, munmap's, msync's and posix_fallocate's
// lengths are no byte counts: written as "count", a DFTracer tool summing
// "count" took a 64 KiB ftruncate for 64 KiB written. DFTracer's brahma
// interposer writes ftruncate's and mmap's as "length".
TEST(Format, PfwLengthsAreDftracerLength) {
  TempDir tmp;
  const std::string file = tmp.sub("sized"), trace = tmp.sub("trace");
  const std::string script =
      "import mmap, os, sys\n"
      "fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o600)\n"
      "os.ftruncate(fd, 65536)\n"
      "os.posix_fallocate(fd, 0, 32768)\n"
      "m = mmap.mmap(fd, 16384)\n"
      "m[0:1] = b'x'\n"
      "m.flush()\n"
      "m.close()\n"
      "os.close(fd)\n";
  RunResult r = strata_run(trace, {PYTHON3, "-c", script, file}, {"--no-python"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::map<std::string, int64_t> want = {
      {"ftruncate", 65536}, {"posix_fallocate", 32768}, {"mmap", 16384}, {"msync", 16384}, {"munmap", 16384}};
  for (const char* version : {"1", "2"}) {
    SCOPED_TRACE(std::string("pfw version ") + version);
    std::map<std::string, std::string> seen;  // name (64 folded) -> its args
    for_each_pfw_record(tmp, trace, version, [&](std::string name, simdjson::dom::object args) {
      if (name.size() > 2 && name.compare(name.size() - 2, 2, "64") == 0) name.resize(name.size() - 2);
      if (!want.count(name)) return;
      simdjson::dom::element v;
      if (!args["length"].get(v) && int64_t(v) == want.at(name)) seen[name] = simdjson::minify(args);
      EXPECT_TRUE(args["count"].get(v)) << name << ": " << simdjson::minify(args);  // no "count"
    });
    for (auto& [name, n] : want) EXPECT_TRUE(seen.count(name)) << name << " with \"length\":" << n;
  }
}

// ---- Block layout of a trace file, read straight from the bytes ----------------
struct BlockPos {
  uint64_t offset, end;  // header start, payload end
  uint8_t type;
  uint32_t count;
};

std::vector<BlockPos> blocks_of(const std::string& bytes) {
  std::vector<BlockPos> out;
  fmtf::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  uint64_t pos = h.header_size;
  while (pos + sizeof(fmtf::BlockHeader) <= bytes.size()) {
    fmtf::BlockHeader b;
    std::memcpy(&b, bytes.data() + pos, sizeof(b));
    uint64_t end = pos + sizeof(b) + b.stored_size;
    if (b.magic != fmtf::kBlockMagic || end > bytes.size()) break;
    out.push_back({pos, end, b.type, b.count});
    pos = end;
  }
  return out;
}

// A single-process trace with many EVENTS blocks: 8 threads x 1000 preads
// (each thread's ring is written as its own blocks) plus the main thread's
// open and close.
struct MultiBlock {
  std::unique_ptr<TempDir> tmp;
  std::string file, bytes;
  std::vector<BlockPos> blocks;
  int64_t events = 0, dropped = 0;
};

const MultiBlock& multi_block() {
  static std::unique_ptr<MultiBlock> m;
  if (m) return *m;
  m = std::make_unique<MultiBlock>();
  m->tmp = std::make_unique<TempDir>();
  std::string data = m->tmp->sub("data"), trace = m->tmp->sub("trace");
  write_text(data, std::string(65536, 'm'));
  RunResult r = strata_run(trace, {PROCS_BIN, "threads", data, "8", "1000"});
  EXPECT_EQ(r.code, 0) << r.err;
  m->dropped = info_trace(trace).dropped;
  auto files = strata::reader::list_trace_files(trace);
  EXPECT_EQ(files.size(), 1u);
  m->file = files.at(0);
  m->bytes = read_text(m->file);
  m->blocks = blocks_of(m->bytes);
  for (auto& b : m->blocks)
    if (b.type == static_cast<uint8_t>(fmtf::BlockType::kEvents)) m->events += b.count;
  return *m;
}

// A copy of the multi-block file, altered, alone in a trace directory.
std::string altered_trace(const TempDir& tmp, const std::string& bytes, const std::string& name = "x.strata") {
  std::string dir = tmp.mkdir("trace");
  write_text(dir + "/" + name, bytes);
  return dir;
}

void expect_clean_error(const std::string& trace, const std::string& must_mention,
                        const std::string& also = "") {
  for (const char* cmd : {"info", "cat", "convert"}) {
    std::vector<std::string> argv = {kStrata, cmd, trace};
    if (std::string(cmd) == "info") argv.push_back("--json");
    if (std::string(cmd) == "convert") argv.insert(argv.end(), {"--to", "chrome", "-o", "/dev/null"});
    RunResult r = run(argv, 30);
    EXPECT_EQ(r.code, 2) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find(must_mention), std::string::npos) << cmd << " error does not name " << must_mention << ": " << r.err;
    if (!also.empty()) { EXPECT_NE(r.err.find(also), std::string::npos) << cmd << ": " << r.err; }
  }
  // A conversion that fails leaves no cut-short file behind for a script that
  // ignores the exit status.
  for (const char* to : {"chrome", "pfw"}) {
    const std::string out = trace + ".converted." + to + ".gz";
    RunResult r = run({kStrata, "convert", trace, "--to", to, "-o", out}, 30);
    EXPECT_EQ(r.code, 2) << to << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << to << ": " << out << " left behind";
  }
}

TEST(Corruption, SourceHasManyBlocks) {
  const auto& m = multi_block();
  EXPECT_EQ(m.dropped, 0);
  EXPECT_EQ(m.events, 8 * 1000 + 2 + 1);  // preads, open and close, the exit of main's return
  int events_blocks = 0;
  for (auto& b : m.blocks) events_blocks += b.type == static_cast<uint8_t>(fmtf::BlockType::kEvents);
  EXPECT_GE(events_blocks, 9);
  EXPECT_EQ(m.blocks.back().type, static_cast<uint8_t>(fmtf::BlockType::kFooter));
  EXPECT_EQ(m.blocks.back().end, m.bytes.size());
}

// A flipped byte inside an EVENTS block's payload: exit 2, the message names
// the file and the block; the reader library reports the same block.
TEST(Corruption, FlippedPayloadByteNamesFileAndBlock) {
  const auto& m = multi_block();
  size_t k = 0;
  for (size_t i = 0; i < m.blocks.size(); ++i)
    if (m.blocks[i].type == static_cast<uint8_t>(fmtf::BlockType::kEvents)) k = i;  // the last EVENTS block
  ASSERT_GT(k, 0u);
  std::string bytes = m.bytes;
  bytes[(m.blocks[k].offset + sizeof(fmtf::BlockHeader) + m.blocks[k].end) / 2] ^= 0x5a;
  TempDir tmp;
  std::string trace = altered_trace(tmp, bytes);
  std::string file = trace + "/x.strata";
  long block_no = static_cast<long>(k) + 1;  // blocks are numbered from 1 (the PROCESS block)
  expect_clean_error(trace, file, "block " + std::to_string(block_no));
  try {
    strata::reader::FileReader r(file);
    strata::reader::EventBatch b;
    while (r.next(b)) {
    }
    ADD_FAILURE() << "no error for a corrupt block";
  } catch (const strata::reader::FormatError& e) {
    EXPECT_EQ(e.file(), file);
    EXPECT_EQ(e.block(), block_no);
    EXPECT_EQ(e.offset(), m.blocks[k].offset);
  }
}

TEST(Corruption, FlippedBlockHeaderByteNamesFileAndBlock) {
  const auto& m = multi_block();
  ASSERT_GE(m.blocks.size(), 3u);
  std::string bytes = m.bytes;
  bytes[m.blocks[2].offset + 9] ^= 0x01;  // stored_size of block 3
  TempDir tmp;
  std::string trace = altered_trace(tmp, bytes);
  expect_clean_error(trace, trace + "/x.strata", "block 3");
}

// Truncated inside its last EVENTS block: every earlier block still reads,
// `info` counts exactly their events and flags the file incomplete.
TEST(Corruption, TruncatedMidBlockKeepsEarlierBlocks) {
  const auto& m = multi_block();
  size_t k = 0;
  int64_t before = 0;
  for (size_t i = 0; i < m.blocks.size(); ++i)
    if (m.blocks[i].type == static_cast<uint8_t>(fmtf::BlockType::kEvents)) k = i;
  for (size_t i = 0; i < k; ++i)
    if (m.blocks[i].type == static_cast<uint8_t>(fmtf::BlockType::kEvents)) before += m.blocks[i].count;
  ASSERT_GT(before, 0);
  TempDir tmp;
  std::string trace = altered_trace(tmp, m.bytes.substr(0, (m.blocks[k].offset + m.blocks[k].end) / 2));
  RunResult ir = run({kStrata, "info", trace, "--json"});
  ASSERT_EQ(ir.code, 0) << ir.err;
  Info info = parse_info(ir.out);
  EXPECT_EQ(info.events, before);
  EXPECT_EQ(info.incomplete_files, 1);
  auto events = cat_trace(trace);
  EXPECT_EQ(static_cast<int64_t>(events.size()), before);
}

// Every cut point of the file: the reader never fails after the PROCESS block
// and yields exactly the events of the EVENTS blocks wholly before the cut.
TEST(Corruption, EveryTruncationPointReadsWholeBlocks) {
  const auto& m = multi_block();
  TempDir tmp;
  std::string path = tmp.sub("cut.strata");
  size_t step = std::max<size_t>(1, m.bytes.size() / 400);
  for (size_t cut = sizeof(fmtf::FileHeader); cut < m.bytes.size(); cut += step) {
    write_text(path, m.bytes.substr(0, cut));
    int64_t want = 0;
    for (auto& b : m.blocks)
      if (b.end <= cut && b.type == static_cast<uint8_t>(fmtf::BlockType::kEvents)) want += b.count;
    try {
      strata::reader::FileReader r(path);
      strata::reader::EventBatch b;
      int64_t got = 0;
      while (r.next(b)) got += static_cast<int64_t>(b.size_events());
      EXPECT_EQ(got, want) << "cut at " << cut;
      EXPECT_FALSE(r.has_footer());
    } catch (const strata::reader::FormatError& e) {
      // Only a file cut inside its PROCESS block may be refused (or read as
      // an empty process).
      EXPECT_LT(cut, m.blocks[0].end) << "cut at " << cut << ": " << e.what();
    }
  }
}

// Random byte flips anywhere: a FormatError or a successful read, never a
// crash or another exception.
TEST(Corruption, RandomByteFlipsNeverCrash) {
  const auto& m = multi_block();
  TempDir tmp;
  std::string path = tmp.sub("flip.strata");
  std::mt19937_64 rng(12345);
  int errors = 0;
  for (int round = 0; round < 300; ++round) {
    std::string bytes = m.bytes;
    size_t at = rng() % bytes.size();
    bytes[at] ^= static_cast<char>(1 + rng() % 255);
    write_text(path, bytes);
    try {
      strata::reader::FileReader r(path);
      strata::reader::EventBatch b;
      while (r.next(b)) {
      }
    } catch (const strata::reader::FormatError& e) {
      ++errors;
      EXPECT_EQ(e.file(), path);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "flip at " << at << ": unexpected exception " << e.what();
    }
  }
  EXPECT_GT(errors, 250) << "checksums catch nearly every flipped byte";
}

TEST(Corruption, EmptyFile) {
  TempDir tmp;
  std::string trace = altered_trace(tmp, "", "empty.strata");
  expect_clean_error(trace, trace + "/empty.strata", "empty");
}

TEST(Corruption, ForeignFileRenamed) {
  TempDir tmp;
  std::string trace = altered_trace(tmp, read_text("/bin/sh"), "sh.strata");
  expect_clean_error(trace, trace + "/sh.strata", "not a strata trace");
  TempDir tmp2;
  std::string trace2 = altered_trace(tmp2, "{\"name\":\"read\"}\n", "json.strata");
  expect_clean_error(trace2, trace2 + "/json.strata");
}

TEST(Corruption, MissingOrEmptyTraceDirectory) {
  TempDir tmp;
  expect_clean_error(tmp.sub("nope"), tmp.sub("nope"));
  std::string empty = tmp.mkdir("empty");
  expect_clean_error(empty, empty);
}

}  // namespace
