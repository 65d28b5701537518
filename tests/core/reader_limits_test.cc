// Readers that never fall over (issue 8, section 4): a block header claiming
// 2^32-1 events, empty and cut files in a trace directory, a gzip bomb of one
// huge DFTracer line, output to a full disk. Each gives a clear error (or a
// "skipped" note) and a bounded amount of memory, never a crash or an OOM.
#include <zlib.h>

#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "format/format.h"
#include "harness.h"

using namespace core_test;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// ASan and TSan reserve terabytes of address space for their shadow memory:
// under RLIMIT_AS they cannot start. The errors are still checked, the
// bound on memory only in the plain build.
constexpr bool kSanitizerShadow = true;
#else
constexpr bool kSanitizerShadow = false;
#endif

// argv under `ulimit -v` (KiB of address space) unless built with a sanitizer.
RunResult run_limited(const std::vector<std::string>& argv, long kib, int timeout_s = 60) {
  if (kSanitizerShadow) return run(argv, timeout_s);
  std::string cmd = "ulimit -v " + std::to_string(kib) + " && exec";
  for (auto& a : argv) cmd += " '" + a + "'";
  return run({"/bin/sh", "-c", cmd}, timeout_s);
}

// `sh -c 'ARGV > /dev/full'`
RunResult run_to_full(const std::vector<std::string>& argv) {
  std::string cmd = "exec";
  for (auto& a : argv) cmd += " '" + a + "'";
  return run({"/bin/sh", "-c", cmd + " > /dev/full"}, 60);
}

std::string read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_file(const std::string& p, const std::string& d) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(d.data(), static_cast<std::streamsize>(d.size()));
}

struct Block {
  size_t offset;
  strata::format::BlockHeader h;
};
std::vector<Block> blocks_of(const std::string& d) {
  std::vector<Block> v;
  size_t pos = 32;
  while (pos + sizeof(strata::format::BlockHeader) <= d.size()) {
    Block b{pos, {}};
    std::memcpy(&b.h, d.data() + pos, sizeof b.h);
    v.push_back(b);
    pos += sizeof b.h + b.h.stored_size;
  }
  return v;
}

// One traced run of a small program: the trace directory and its one file.
struct Traced {
  TempDir tmp;
  std::string trace, file;
  int64_t events = -1;
  Traced() {
    trace = tmp.sub("trace");
    RunResult r = strata_run(trace, {"/bin/cat", "/etc/hostname"});
    EXPECT_EQ(r.code, 0) << r.err;
    for (auto& e : fs::directory_iterator(trace)) file = e.path().string();
    events = info_trace(file).events;
  }
};

TEST(ReaderLimits, HugeEventCountIsAClearErrorWithBoundedMemory) {
  Traced t;
  ASSERT_GT(t.events, 0);
  std::string d = read_file(t.file);
  size_t at = 0;
  for (auto& b : blocks_of(d))
    if (b.h.type == static_cast<uint8_t>(strata::format::BlockType::kEvents)) {
      at = b.offset;
      break;
    }
  ASSERT_GT(at, 0u) << "no EVENTS block";
  for (uint32_t count : {0xFFFFFFFFu, 1000000u}) {
    SCOPED_TRACE(count);
    std::string bad = d;
    strata::format::BlockHeader h;
    std::memcpy(&h, bad.data() + at, sizeof h);
    h.count = count;
    h.header_hash = strata::format::header_hash_of(h);
    std::memcpy(bad.data() + at, &h, sizeof h);
    const std::string p = t.tmp.sub("huge.strata");
    write_file(p, bad);
    for (const char* cmd : {"info", "cat"}) {
      RunResult r = run_limited({kStrata, cmd, p}, 1 << 20);  // 1 GiB of address space
      SCOPED_TRACE(cmd);
      EXPECT_EQ(r.signal, 0) << r.err;
      EXPECT_EQ(r.code, 2) << r.err;
      EXPECT_NE(r.err.find(p + ": block "), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(" at offset " + std::to_string(at) + ": EVENTS block: header claims " +
                           std::to_string(count) + " events"),
                std::string::npos)
          << r.err;
    }
    RunResult a = run_limited({kStrata, "analyze", p}, 1 << 20);
    EXPECT_EQ(a.signal, 0) << a.err;
    EXPECT_EQ(a.code, 1) << a.err;
    EXPECT_NE(a.err.find(std::to_string(count) + " events"), std::string::npos) << a.err;
  }
}

// An EVENTS block whose name ids were never defined: an error, not a table
// of 2^32 entries in `strata info`.
TEST(ReaderLimits, UndefinedNameIdIsAnError) {
  TempDir tmp;
  namespace f = strata::format;
  // Build a file: header, PROCESS, EVENTS with name id 4000000000.
  std::string d(32, '\0');
  f::FileHeader fh{};
  std::memcpy(fh.magic, f::kFileMagic, 8);
  fh.version_major = f::kVersionMajor;
  fh.version_minor = 1;
  fh.header_size = 32;
  std::memcpy(d.data(), &fh, 32);
  auto block = [&](f::BlockType type, uint32_t count, const std::string& payload) {
    f::BlockHeader h{};
    h.magic = f::kBlockMagic;
    h.type = static_cast<uint8_t>(type);
    h.codec = 0;
    h.stored_size = h.raw_size = static_cast<uint32_t>(payload.size());
    h.count = count;
    h.header_hash = f::header_hash_of(h);
    h.payload_hash = XXH3_64bits(payload.data(), payload.size());
    d.append(reinterpret_cast<const char*>(&h), sizeof h);
    d += payload;
  };
  // pid 1, ppid 0, rank -1 (1), wall, mono, ticks, q32, 4 empty strings, argc 0, nmeta 0
  block(f::BlockType::kProcess, 0, std::string("\x02\x00\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00", 13));
  // tid 1, base 0, 2 columns: name varint 5 bytes, ts varint 1 byte
  std::string ev = std::string("\x01\x00\x02", 3) + std::string("\x01\x00\x05", 3) + std::string("\x02\x00\x01", 3) +
                   std::string("\x80\xd0\xac\xf3\x0e", 5) + std::string("\x00", 1);
  block(f::BlockType::kEvents, 1, ev);
  const std::string p = tmp.sub("undefined.strata");
  write_file(p, d);
  RunResult r = run_limited({kStrata, "info", p}, 1 << 20);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(p + ": block 2 at offset "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("event 0 uses name id 4000000000, not defined"), std::string::npos) << r.err;
}

TEST(ReaderLimits, EmptyAndCutFilesAreSkipped) {
  Traced t;
  ASSERT_GT(t.events, 0);
  const std::string good = read_file(t.file);
  TempDir tmp;
  const std::string dir = tmp.mkdir("mixed");
  const std::string copy = dir + "/" + fs::path(t.file).filename().string();
  write_file(copy, good);
  const std::string empty = dir + "/a-empty-1.strata";
  write_file(empty, "");
  const std::string cut = dir + "/b-cut-2.strata";
  write_file(cut, good.substr(0, 42));  // 10 bytes into the PROCESS block's header

  RunResult r = run({kStrata, "info", dir, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  Info info = parse_info(r.out);
  EXPECT_EQ(info.events, t.events);
  EXPECT_EQ(info.processes, 1);
  EXPECT_NE(r.err.find("skipped " + empty + ": empty"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("skipped " + cut + ": cut at byte 42 inside block 1"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("\"skipped\":[{\"file\":"), std::string::npos) << r.out;

  RunResult c = run({kStrata, "cat", dir});
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(static_cast<int64_t>(parse_events(c.out).size()), t.events);
  EXPECT_NE(c.err.find("skipped " + empty + ": empty"), std::string::npos) << c.err;

  RunResult a = run({kStrata, "analyze", dir, "--json"});
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.out.find("skipped " + empty + ": empty"), std::string::npos);
  EXPECT_NE(a.out.find("skipped " + cut + ": cut at byte 42 inside block 1"), std::string::npos);

  // Alone, a file with nothing to read is an error naming it and the block.
  RunResult one = run({kStrata, "info", cut});
  EXPECT_EQ(one.code, 2);
  EXPECT_NE(one.err.find(cut + ": cut at byte 42 inside block 1"), std::string::npos) << one.err;
  RunResult e = run({kStrata, "cat", empty});
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.err.find(empty + ": empty"), std::string::npos) << e.err;
}

TEST(ReaderLimits, OutputToFullDiskFails) {
  Traced t;
  ASSERT_GT(t.events, 0);
  struct Case {
    std::vector<std::string> argv;
    bool redirect;
  } cases[] = {
      {{kStrata, "cat", t.trace}, true},
      {{kStrata, "info", t.trace}, true},
      {{kStrata, "info", "--json", t.trace}, true},
      {{kStrata, "analyze", t.trace}, true},
      {{kStrata, "analyze", "--json", t.trace}, true},
      {{kStrata, "convert", t.trace, "--to", "chrome", "-o", "-"}, true},
      {{kStrata, "convert", t.trace, "--to", "chrome", "-o", "/dev/full"}, false},
      {{kStrata, "convert", t.trace, "--to", "pfw", "-o", "/dev/full"}, false},
      {{kStrata, "analyze", t.trace, "--html", "/dev/full"}, false},
  };
  for (auto& c : cases) {
    RunResult r = c.redirect ? run_to_full(c.argv) : run(c.argv);
    SCOPED_TRACE(join(c.argv));
    EXPECT_EQ(r.signal, 0);
    EXPECT_NE(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("writ"), std::string::npos) << r.err;
  }
  // The same to a real file works (the failure above is the disk's).
  RunResult ok = run({kStrata, "convert", t.trace, "--to", "pfw", "-o", t.tmp.sub("x.pfw.gz")});
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// A .pfw.gz of ~250 KB holding one 256 MiB line: a clear error naming the
// file and line, within 1 GiB of address space.
TEST(ReaderLimits, PfwGzipBombLineIsBounded) {
  TempDir tmp;
  const std::string p = tmp.sub("bomb.pfw.gz");
  gzFile g = gzopen(p.c_str(), "wb1");
  ASSERT_NE(g, nullptr);
  std::string head = "[\n{\"id\":1,\"name\":\"read\",\"cat\":\"POSIX\",\"ts\":1,\"args\":{\"fname\":\"";
  gzwrite(g, head.data(), static_cast<unsigned>(head.size()));
  std::string chunk(1 << 20, 'x');
  for (int i = 0; i < 256; ++i) ASSERT_EQ(gzwrite(g, chunk.data(), static_cast<unsigned>(chunk.size())), 1 << 20);
  gzwrite(g, "\"}}\n]\n", 6);
  ASSERT_EQ(gzclose(g), Z_OK);
  ASSERT_LT(fs::file_size(p), 2u << 20);
  RunResult r = run_limited({kStrata, "analyze", p}, 1 << 20, 120);
  EXPECT_EQ(r.signal, 0) << r.err;
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find(p + ":2: line longer than 16 MiB"), std::string::npos) << r.err;
}

}  // namespace
