// `strata efg --compress` through the library: random traces written with
// the format's encoder round-trip through EFG blocks field for field, and
// `strata cat`'s rendering of both is byte-identical; --no-times changes the
// times only; corrupt EFG blocks fail naming the file.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../common/process.h"
#include "convert/convert.h"
#include "efg/compress.h"
#include "format/efg_block.h"
#include "format/encoder.h"
#include "strata/reader.h"
#include "trace_writer.h"

namespace {

namespace fs = std::filesystem;
namespace ff = strata::format;
using strata::reader::EventBatch;
using strata::reader::FileReader;

constexpr int kNames = 6, kStrings = 12, kContexts = 5;

// Writes one trace file: a process block, a dictionary of kNames functions,
// kStrings paths and kContexts tag sets, then the events in blocks as given.
struct FileSpec {
  std::vector<std::pair<uint32_t, std::vector<ff::EncodeEvent>>> blocks;  // (tid, events)
  bool footer = true;
  uint64_t tick_q32 = 0;  // ns per tick (32.32); 0: times in ns
};

void write_trace(const std::string& path, const FileSpec& spec) {
  strata::bench::TraceFileWriter w(path, 1 << 16);
  ff::ProcessRecord p;
  p.pid = 4242;
  p.ppid = 1;
  p.start_wall_ns = 1'700'000'000'000'000'000ull;
  p.start_mono_ns = 1'000'000'000;
  p.hostname = "host";
  p.exe = "/bin/prog";
  p.version = "test";
  p.mode = "trace";
  p.tick_q32 = spec.tick_q32;
  p.start_ticks = spec.tick_q32 ? 4'000'000'000 : 0;
  w.process(p);
  uint32_t entries = 0;
  for (uint32_t s = 1; s <= kStrings; ++s, ++entries)
    ff::dict_string(w.dict(), s, s <= 2 ? (s == 1 ? "POSIX" : "epoch") : "/data/d" + std::to_string(s % 3) + "/f" + std::to_string(s));
  for (uint32_t n = 1; n <= kNames; ++n, ++entries)
    ff::dict_name(w.dict(), n, 2 + n, 1, ff::kFieldFd | ff::kFieldPath | ff::kFieldOffset | ff::kFieldSize | ff::kFieldRet | ff::kFieldErrno,
                  ff::EventKind::kComplete);
  for (uint32_t c = 1; c <= kContexts; ++c, ++entries) {
    ff::TagEntry t{2, true, static_cast<int64_t>(c)};
    ff::dict_context(w.dict(), c, &t, 1);
  }
  w.flush_dict(entries);
  for (const auto& [tid, events] : spec.blocks) w.events(tid, events.data(), events.size());
  if (spec.footer) w.finish();
}

// Random events: loops of a few signatures with noise, and extreme values.
FileSpec random_spec(std::mt19937_64& rng, size_t max_events) {
  FileSpec spec;
  auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
  const int threads = 1 + static_cast<int>(pick(3));
  std::vector<uint64_t> clock(threads + 1, 5'000'000'000ull);
  const size_t total = 1 + pick(max_events);
  const size_t loop_len = 1 + pick(6);
  const bool extreme = pick(4) == 0;
  for (size_t done = 0; done < total;) {
    const uint32_t t = 1 + static_cast<uint32_t>(pick(threads));
    const size_t n = std::min(total - done, 1 + static_cast<size_t>(pick(300)));
    std::vector<ff::EncodeEvent> events(n);
    for (size_t i = 0; i < n; ++i) {
      ff::EncodeEvent& e = events[i];
      const size_t k = (done + i) % loop_len;
      const bool noise = pick(10) == 0;
      e.name = 1 + static_cast<uint32_t>(noise ? pick(kNames) : k % kNames);
      e.path = pick(5) == 0 ? 0 : 3 + static_cast<uint32_t>(pick(kStrings - 2));
      e.ctx = static_cast<uint32_t>(pick(kContexts + 1));
      e.fd = pick(8) == 0 ? -1 : 3 + static_cast<int32_t>(pick(4));
      e.err = pick(20) == 0 ? static_cast<int32_t>(pick(140)) : 0;
      e.size = pick(6) == 0 ? -1 : static_cast<int64_t>(4096 * (1 + k));
      e.ret = pick(7) == 0 ? -1 : e.size;
      e.offset = pick(5) == 0 ? -1 : static_cast<int64_t>(pick(1 << 20));
      e.mem_align = static_cast<uint32_t>(pick(14));
      if (extreme) {
        const int64_t big[] = {INT64_MIN, INT64_MAX, -2, 0, 1ll << 62};
        if (pick(3) == 0) e.offset = big[pick(5)];
        if (pick(3) == 0) e.size = big[pick(5)];
        if (pick(3) == 0) e.ret = big[pick(5)];
        if (pick(5) == 0) e.err = INT32_MIN + static_cast<int32_t>(pick(3));
      }
      e.start = clock[t] + pick(1000);
      e.end = e.start + (pick(4) == 0 ? 0 : pick(100000));
      clock[t] = e.end;
    }
    spec.blocks.emplace_back(t, std::move(events));
    done += n;
  }
  spec.footer = pick(5) != 0;
  // Half the files in TSC-like ticks (the runtime's ~2.7 ns or a finer
  // clock), which --compress stores as ticks again.
  const uint64_t q32[] = {0, 0, 11'453'246'122ull, 1'431'655'765ull};
  spec.tick_q32 = q32[pick(4)];
  return spec;
}

std::vector<EventBatch> batches_of(const std::string& file) {
  FileReader r(file);
  std::vector<EventBatch> out;
  EventBatch b;
  while (r.next(b)) out.push_back(b);
  return out;
}

std::string cat_of(const std::string& trace) {
  const std::string tmp = trace + ".cat";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  strata::convert::write_json_lines(trace, f);
  std::fclose(f);
  std::ifstream in(tmp, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(tmp);
  return s;
}

void expect_same_fields(const EventBatch& a, const EventBatch& b, bool times, const std::string& what) {
  ASSERT_EQ(a.tid, b.tid) << what;
  ASSERT_EQ(a.size_events(), b.size_events()) << what;
  EXPECT_EQ(a.name, b.name) << what;
  EXPECT_EQ(a.path, b.path) << what;
  EXPECT_EQ(a.ctx, b.ctx) << what;
  EXPECT_EQ(a.fd, b.fd) << what;
  EXPECT_EQ(a.err, b.err) << what;
  EXPECT_EQ(a.offset, b.offset) << what;
  EXPECT_EQ(a.size, b.size) << what;
  EXPECT_EQ(a.ret, b.ret) << what;
  EXPECT_EQ(a.mem_align, b.mem_align) << what;
  if (times) {
    EXPECT_EQ(a.ts, b.ts) << what;
    EXPECT_EQ(a.dur, b.dur) << what;
  }
}

TEST(EfgCompress, RandomTracesRoundTripFieldForField) {
  strata_test::TempDir dir("strata-efgc");
  std::mt19937_64 rng(20261125);
  for (int round = 0; round < 2000; ++round) {
    const std::string in = dir.sub("in" + std::to_string(round));
    fs::create_directories(in);
    const FileSpec spec = random_spec(rng, round % 50 == 0 ? 5000 : 400);
    write_trace(in + "/host-4242-1.strata", spec);
    const std::string out = dir.sub("out" + std::to_string(round));
    auto r = strata::efg::compress_trace({in, out, false});
    ASSERT_EQ(r.files, 1u);
    const auto a = batches_of(in + "/host-4242-1.strata");
    const auto b = batches_of(out + "/host-4242-1.strata");
    ASSERT_EQ(a.size(), b.size()) << "round " << round;
    for (size_t i = 0; i < a.size(); ++i) expect_same_fields(a[i], b[i], true, "round " + std::to_string(round));
    {
      FileReader r(out + "/host-4242-1.strata");
      EventBatch b;
      while (r.next(b)) {
      }
      EXPECT_EQ(r.has_footer(), spec.footer) << "round " << round;
    }
    if (round % 100 == 0) {
      EXPECT_EQ(cat_of(in), cat_of(out)) << "round " << round;
    }
    if (HasFailure()) return;
    fs::remove_all(in);
    fs::remove_all(out);
  }
}

TEST(EfgCompress, NoTimesKeepsEverythingButTimes) {
  strata_test::TempDir dir("strata-efgc");
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    const std::string in = dir.sub("in" + std::to_string(round));
    fs::create_directories(in);
    write_trace(in + "/host-4242-1.strata", random_spec(rng, 600));
    const std::string out = dir.sub("out" + std::to_string(round));
    strata::efg::compress_trace({in, out, true});
    const auto a = batches_of(in + "/host-4242-1.strata");
    const auto b = batches_of(out + "/host-4242-1.strata");
    ASSERT_EQ(a.size(), b.size());
    // Times become the thread's first start plus the event's index in the
    // thread, with no duration: order within a thread survives.
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> thread;  // tid -> (first ts, events so far)
    for (size_t i = 0; i < a.size(); ++i) {
      expect_same_fields(a[i], b[i], false, "round " + std::to_string(round));
      auto [it, fresh] = thread.try_emplace(a[i].tid, a[i].ts[0], 0);
      for (size_t k = 0; k < b[i].size_events(); ++k) {
        ASSERT_EQ(b[i].ts[k], it->second.first + it->second.second++);
        ASSERT_EQ(b[i].dur[k], 0u);
      }
    }
    if (HasFailure()) return;
  }
}

TEST(EfgCompress, LargeFilesSplitIntoSegments) {
  strata_test::TempDir dir("strata-efgc");
  FileSpec spec;
  uint64_t t = 1'000'000'000;
  const size_t total = 2 * ff::kEfgMaxEvents + 12345;
  for (size_t done = 0; done < total;) {
    std::vector<ff::EncodeEvent> events(std::min<size_t>(65536, total - done));
    for (size_t i = 0; i < events.size(); ++i) {
      auto& e = events[i];
      e.name = 1 + static_cast<uint32_t>((done + i) % 5);
      e.path = 3 + static_cast<uint32_t>((done + i) / 5 % 9);
      e.fd = 3;
      e.offset = static_cast<int64_t>(((done + i) % 5) * 4096);
      e.size = e.ret = 4096;
      e.start = t += 300;
      e.end = t += 1000;
    }
    done += events.size();
    spec.blocks.emplace_back(1, std::move(events));
  }
  fs::create_directories(dir.sub("in"));
  write_trace(dir.sub("in/host-4242-1.strata"), spec);
  auto r = strata::efg::compress_trace({dir.sub("in"), dir.sub("out"), false});
  EXPECT_EQ(r.events, total);
  EXPECT_EQ(r.efg_blocks, 3u);
  EXPECT_EQ(cat_of(dir.sub("in")), cat_of(dir.sub("out")));
  EXPECT_LT(r.output_bytes, r.input_bytes);
}

// An EFG block whose partitions do not describe one walk: the reader names
// the file and the block, never crashes.
TEST(EfgCompress, CorruptBlockIsAClearError) {
  strata_test::TempDir dir("strata-efgc");
  FileSpec spec;
  std::vector<ff::EncodeEvent> ev(10);
  for (size_t i = 0; i < ev.size(); ++i) {
    ev[i].name = 1 + i % 2;
    ev[i].start = 100 + i * 10;
    ev[i].end = ev[i].start + 5;
  }
  spec.blocks.emplace_back(1, ev);
  fs::create_directories(dir.sub("in"));
  write_trace(dir.sub("in/host-4242-1.strata"), spec);
  strata::efg::compress_trace({dir.sub("in"), dir.sub("out"), false});
  const std::string file = dir.sub("out/host-4242-1.strata");
  // Rewrite the EFG block with one partition's block length changed.
  std::ifstream in(file, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  // Find the EFG block, decompress, damage, reframe.
  size_t pos = sizeof(ff::FileHeader);
  bool damaged = false;
  while (pos + sizeof(ff::BlockHeader) <= bytes.size()) {
    ff::BlockHeader h;
    std::memcpy(&h, bytes.data() + pos, sizeof h);
    if (h.type == static_cast<uint8_t>(ff::BlockType::kEfg)) {
      // A payload with 2 nodes whose thread claims partitions that overlap.
      ff::ByteSink p;
      p.put_varint(0);                   // flags
      p.put_varint(2);                   // nodes
      p.put_varint(1), p.put_varint(2);  // names
      p.put_varint(1);                   // threads
      p.put_varint(1), p.put_varint(10), p.put_varint(100), p.put_varint(1);
      p.put_varint(2);  // node 1: two partitions, both to node 2 covering visit 0
      for (int k = 0; k < 2; ++k) p.put_varint(2), p.put_varint(0), p.put_varint(0), p.put_varint(0), p.put_varint(1);
      p.put_varint(0);  // node 2: none
      ff::BlockFramer framer(1);
      ASSERT_TRUE(framer.frame(ff::BlockType::kEfg, 10, p.bytes(), false));
      std::vector<uint8_t> out(bytes.begin(), bytes.begin() + static_cast<long>(pos));
      out.insert(out.end(), framer.data(), framer.data() + framer.size());
      std::ofstream(file, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(out.data()), static_cast<long>(out.size()));
      damaged = true;
      break;
    }
    pos += sizeof h + h.stored_size;
  }
  ASSERT_TRUE(damaged);
  try {
    batches_of(file);
    FAIL() << "no error for a corrupt EFG block";
  } catch (const strata::reader::FormatError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file), std::string::npos) << what;
    EXPECT_NE(what.find("EFG block: thread 1: t-EFG: overlapping partitions at node 1"), std::string::npos) << what;
  }
}

TEST(EfgCompress, RefusesANonEmptyOutputAndDFTracerInput) {
  strata_test::TempDir dir("strata-efgc");
  FileSpec spec;
  spec.blocks.emplace_back(1, std::vector<ff::EncodeEvent>(3));
  fs::create_directories(dir.sub("in"));
  write_trace(dir.sub("in/host-4242-1.strata"), spec);
  try {
    strata::efg::compress_trace({dir.sub("in"), dir.sub("in"), false});
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exists and is not empty"), std::string::npos) << e.what();
  }
  std::ofstream(dir.sub("t.pfw")) << "[\n";
  try {
    strata::efg::compress_trace({dir.sub("t.pfw"), dir.sub("o"), false});
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("a DFTracer trace; --compress rewrites strata traces"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.sub("o")));
}

}  // namespace
