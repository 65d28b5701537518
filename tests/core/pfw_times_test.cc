// Times in the DFTracer .pfw output (strata convert --to pfw): DFTracer counts
// microseconds, strata nanoseconds. An event's end is rounded like its start,
// so an event that ends inside its parent's last microsecond stays inside
// its parent (Perfetto and DFAnalyzer nest events by these times).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "convert/convert.h"
#include "format/encoder.h"
#include "format/format.h"
#include "trace_writer.h"

namespace {

namespace ff = strata::format;

constexpr uint64_t kStartMono = 1'000'000'000;
constexpr uint64_t kStartWall = 1'700'000'000'000'000'000ull;  // a whole microsecond

ff::EncodeEvent complete(uint32_t name, uint64_t start_ns, uint64_t end_ns) {
  ff::EncodeEvent e;
  e.start = kStartMono + start_ns;
  e.end = kStartMono + end_ns;
  e.name = name;
  e.path = 3;
  e.fd = 5;
  e.size = 8;
  e.ret = 8;
  return e;
}

// A one-process trace: "parent" from 10.9 to 15.0 us, "read" from 14.0 to 15.0 us.
std::string write_nested_trace(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "host-4242-1.strata").string();
  strata::bench::TraceFileWriter w(path, 64);
  ff::ProcessRecord p;
  p.pid = 4242;
  p.ppid = 1;
  p.start_wall_ns = kStartWall;
  p.start_mono_ns = kStartMono;
  p.hostname = "host";
  p.exe = "/bin/prog";
  p.version = "test";
  p.mode = "trace";
  w.process(p);
  ff::dict_string(w.dict(), 1, "POSIX");
  ff::dict_string(w.dict(), 2, "app");
  ff::dict_string(w.dict(), 3, "/data/f");
  ff::dict_string(w.dict(), 4, "parent");
  ff::dict_string(w.dict(), 5, "read");
  const uint32_t fields = ff::kFieldFd | ff::kFieldPath | ff::kFieldSize | ff::kFieldRet;
  ff::dict_name(w.dict(), 1, 4, 2, fields, ff::EventKind::kComplete);
  ff::dict_name(w.dict(), 2, 5, 1, fields, ff::EventKind::kComplete);
  w.flush_dict(7);
  const ff::EncodeEvent events[] = {complete(2, 14'000, 15'000), complete(1, 10'900, 15'000)};
  w.events(4242, events, 2);
  w.finish();
  return dir.string();
}

// name -> (ts, dur) of the .pfw lines.
std::map<std::string, std::pair<int64_t, int64_t>> times_by_name(const std::string& pfw) {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  std::ifstream in(pfw);
  std::string line;
  auto field = [&](const std::string& key) {
    const size_t at = line.find("\"" + key + "\":");
    return at == std::string::npos ? int64_t{-1} : std::strtoll(line.c_str() + at + key.size() + 3, nullptr, 10);
  };
  while (std::getline(in, line)) {
    const size_t at = line.find("\"name\":\"");
    if (at == std::string::npos) continue;
    const std::string name = line.substr(at + 8, line.find('"', at + 8) - at - 8);
    if (name == "parent" || name == "read") out[name] = {field("ts"), field("dur")};
  }
  return out;
}

TEST(PfwTimes, AChildEndingInItsParentsLastMicrosecondStaysInside) {
  const auto dir = std::filesystem::temp_directory_path() / ("strata-pfw-times-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string trace = write_nested_trace(dir / "trace");
  const std::string pfw = (dir / "t.pfw").string();
  for (int version : {1, 2}) {
    SCOPED_TRACE("pfw version " + std::to_string(version));
    ASSERT_EQ(strata::convert::write_pfw(trace, pfw, version), 2u);
    auto t = times_by_name(pfw);
    ASSERT_EQ(t.size(), 2u);
    const int64_t wall_us = static_cast<int64_t>(kStartWall / 1000);
    // Start and end each rounded down: 10.9 -> 10, 15.0 -> 15 (not 10 + 4.1 -> 14).
    EXPECT_EQ(t["parent"].first, wall_us + 10);
    EXPECT_EQ(t["parent"].first + t["parent"].second, wall_us + 15);
    EXPECT_EQ(t["read"].first, wall_us + 14);
    EXPECT_EQ(t["read"].first + t["read"].second, wall_us + 15);
    EXPECT_LE(t["read"].first + t["read"].second, t["parent"].first + t["parent"].second);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
