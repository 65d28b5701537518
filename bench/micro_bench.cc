// Micro benchmarks (Google Benchmark) of the trace format's hot pieces:
//   - EventsEncoder::encode of 8192 pread-like events (the writer thread's
//     per-block work), alone and with zstd framing (BlockFramer) at several
//     block sizes and zstd levels;
//   - varint put/get (every column);
//   - FileReader decode of a generated 1M-event pread trace;
//   - the least per-file work of a report with a row per file (BM_PerFileFloor).
// items_per_second is events (or varints, or files) per second on one core.
//
//   build-bench/bin/micro_bench [--benchmark_filter=Encoder] [--benchmark_min_time=0.5]
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string_view>
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "format/encoder.h"
#include "format/varint.h"
#include "strata/reader.h"
#include "trace_writer.h"

namespace fmt = strata::format;

namespace {

// The pread_bench pattern as the runtime records it: same fd/path/size/ret,
// offsets (i * 7919 % nblk) * 4096, start gaps and durations of a few hundred
// TSC ticks with jitter.
std::vector<fmt::EncodeEvent> pread_events(size_t n, uint64_t seed = 42) {
  std::mt19937_64 rng(seed);
  std::vector<fmt::EncodeEvent> v(n);
  const uint64_t nblk = (64ull << 20) / 4096;
  uint64_t t = 1'000'000'000;
  for (size_t i = 0; i < n; ++i) {
    auto& e = v[i];
    t += 60 + rng() % 40;
    e.start = t;
    t += 500 + rng() % 200;
    e.end = t;
    e.offset = static_cast<int64_t>((i * 7919 % nblk) * 4096);
    e.size = 4096;
    e.ret = 4096;
    e.name = 10;  // pread
    e.path = 7;
    e.ctx = 0;
    e.fd = 3;
    e.err = 0;
  }
  return v;
}

void BM_EventsEncoder(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto ev = pread_events(n);
  fmt::EventsEncoder enc(n);
  fmt::ByteSink out;
  out.reserve(n * 20 * fmt::kNumColumns + 64);
  for (auto _ : state) {
    enc.encode(1234, ev.data(), n, out);
    benchmark::DoNotOptimize(out.bytes().data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.counters["raw_B_per_event"] = double(out.size()) / n;
}
BENCHMARK(BM_EventsEncoder)->Arg(8192);

// Args: events per block, zstd level (the runtime's default is 1; negative
// levels are zstd's faster modes, STRATA_ZSTD_LEVEL selects one at run time).
void BM_EncodeAndFrame(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto ev = pread_events(n);
  fmt::EventsEncoder enc(n);
  fmt::BlockFramer framer(static_cast<int>(state.range(1)));
  fmt::ByteSink out;
  out.reserve(n * 20 * fmt::kNumColumns + 64);
  for (auto _ : state) {
    const size_t prefix = enc.encode(1234, ev.data(), n, out);
    framer.frame(fmt::BlockType::kEvents, static_cast<uint32_t>(n), out.bytes(), true, prefix);
    benchmark::DoNotOptimize(framer.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.counters["stored_B_per_event"] = double(framer.size()) / n;
}
BENCHMARK(BM_EncodeAndFrame)->ArgNames({"events", "level"})->Args({8192, 1})->Args({16384, 1})->Args({8192, -1})->Args({8192, -5})->Args({8192, 3});

// Values as the columns see them: mostly one byte, some 2-3 bytes (gaps,
// durations), a few long (new offset deltas).
std::vector<uint64_t> varint_values(size_t n) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> v(n);
  for (auto& x : v) {
    unsigned r = rng() % 100;
    x = r < 70 ? rng() % 128 : r < 90 ? rng() % 16384 : r < 97 ? rng() % (1u << 21) : rng() % (1ull << 40);
  }
  return v;
}

void BM_VarintPut(benchmark::State& state) {
  auto v = varint_values(4096);
  std::vector<uint8_t> buf(v.size() * 10);
  for (auto _ : state) {
    uint8_t* p = buf.data();
    for (uint64_t x : v) p = fmt::put_varint(p, x);
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * v.size()));
}
BENCHMARK(BM_VarintPut);

void BM_VarintGet(benchmark::State& state) {
  auto v = varint_values(4096);
  std::vector<uint8_t> buf(v.size() * 10);
  uint8_t* e = buf.data();
  for (uint64_t x : v) e = fmt::put_varint(e, x);
  for (auto _ : state) {
    const uint8_t* p = buf.data();
    uint64_t sum = 0, x = 0;
    while (p && p < e) {
      p = fmt::get_varint(p, e, x);
      sum += x;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * v.size()));
}
BENCHMARK(BM_VarintGet);

// A 1M-event pread trace (64 blocks of 16384 events), written once.
std::string decode_trace() {
  static std::string path = [] {
    char tmpl[] = "/tmp/strata-micro-XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    std::string p = std::string(tmpl) + "/bench-1-1.strata";
    const size_t block = 16384, blocks = 64;
    strata::bench::TraceFileWriter w(p, block);
    fmt::ProcessRecord pr;
    pr.pid = 1;
    pr.hostname = "bench";
    pr.mode = "trace";
    pr.tick_q32 = 1ull << 31;  // 0.5 ns per tick: exercise the tick conversion like a TSC trace
    w.process(pr);
    fmt::ByteSink& d = w.dict();
    fmt::dict_string(d, 1, "pread");
    fmt::dict_string(d, 2, "POSIX");
    fmt::dict_string(d, 7, "/tmp/file64m.bin");
    fmt::dict_name(d, 10, 1, 2, 0x3f, fmt::EventKind::kComplete);
    w.flush_dict(4);
    auto ev = pread_events(block * blocks);
    for (size_t b = 0; b < blocks; ++b) w.events(1, ev.data() + b * block, block);
    w.finish();
    return p;
  }();
  return path;
}

void BM_FileReaderDecode(benchmark::State& state) {
  const std::string path = decode_trace();
  uint64_t events = 0;
  for (auto _ : state) {
    strata::reader::FileReader r(path);
    strata::reader::EventBatch b;
    while (r.next(b)) {
      events += b.size_events();
      benchmark::DoNotOptimize(b.ts.data());
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["file_B_per_event"] = double(std::filesystem::file_size(path)) / (16384.0 * 64);
}
BENCHMARK(BM_FileReaderDecode)->Unit(benchmark::kMillisecond);

// A floor under the per-file work of a report with a line per file (issue 9
// §5's newfile shape, where every event is a new file): each path is looked
// up in an open-addressing table sized ahead (one hash, one probe, no
// allocation), and gets one short JSON row, in the order met (no sort, no
// counters, no verdict, no reading). items_per_second = files per second on
// one core: the ceiling of any analysis that prints a row per file of such a
// trace. The paths are those of bench/workloads/analyze_shapes.c's newfile.
void BM_PerFileFloor(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<std::string> paths(n);
  for (size_t i = 0; i < n; ++i)
    paths[i] = "/tmp/strata-bench-cache/shapes-2M/newfile-data/d" + std::to_string(i % 1000) + "/f" +
               std::to_string(i);
  size_t slots = 1;
  while (slots < 2 * n) slots <<= 1;
  std::vector<const std::string*> table(slots);
  std::string json;
  json.reserve(n * 96);
  for (auto _ : state) {
    std::fill(table.begin(), table.end(), nullptr);
    json.clear();
    for (const std::string& p : paths) {
      size_t h = std::hash<std::string_view>{}(p) & (slots - 1);
      while (table[h] && *table[h] != p) h = (h + 1) & (slots - 1);
      if (table[h]) continue;
      table[h] = &p;
      json += "{\"path\":\"";
      json += p;
      json += "\",\"stats\":1},\n";
    }
    benchmark::DoNotOptimize(json.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_PerFileFloor)->Arg(300'000)->Arg(2'000'000)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(decode_trace()).parent_path(), ec);
  return 0;
}
