// gen_trace: writes a synthetic but realistic strata trace directory of N events,
// for benchmarking the reader and `strata analyze` (issue 3: 100 M events).
//
//   gen_trace -o DIR [-n 100M] [-p 8] [-t 4] [-j 2] [--seed 1] [--block 8192] [--speedup 1] [--force]
//   (--speedup F divides every gap and duration by F: a faster storage tier,
//   F times more events per second of trace)
//
// The job it imitates: P ranks of a data-parallel training run (common parent,
// MPI-style ranks), each with a main thread and T-1 data-loader threads, over
// 10 epochs of 1000 steps, every event tagged epoch/step/stage:
//   - loader threads: per sample, sometimes stat, then open64 a training shard
//     (256 shards of 256 MiB, shared by all ranks), sometimes fstat, 1-8
//     sequential pread64 of 4 KiB..1 MiB at a random offset, close; the last
//     10% of each epoch reads the 32 validation shards (stage=val);
//   - main thread: start-up (config via fopen/fgets/fclose, ~40 shared
//     libraries: stat/open/read/fstat/close), then streaming read() of shards
//     in 1 MiB chunks, small write() appends to a per-rank log, stat (3% fail
//     with ENOENT), lseek64; rank 0 writes a 64 MiB checkpoint (open64,
//     64 x write 1 MiB, fsync, close) at the end of each epoch.
// Times are ns (tick_q32 = 0), consistent per thread (start >= previous end).
// Files are generated in parallel (-j); output is deterministic for a seed.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "trace_writer.h"

namespace fs = std::filesystem;
namespace fmt = strata::format;
using strata::bench::TraceFileWriter;

namespace {

struct Options {
  std::string out;
  uint64_t events = 100'000'000;
  int procs = 8;
  int threads = 4;
  int jobs = 0;
  uint64_t seed = 1;
  size_t block = 8192;  // the runtime's default ring: 1 MiB / 64-byte records, drained when half full
  bool force = false;
  double speedup = 1;  // divides every gap and duration: a faster storage tier, denser trace
};

uint64_t parse_count(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end && *end) {
    switch (*end) {
      case 'k': case 'K': v *= 1e3; break;
      case 'm': case 'M': v *= 1e6; break;
      case 'g': case 'G': v *= 1e9; break;
      default: throw std::runtime_error(std::string("bad count: ") + s);
    }
  }
  if (v < 0) throw std::runtime_error(std::string("bad count: ") + s);
  return static_cast<uint64_t>(v);
}

// xorshift64*: fast, deterministic.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {
    if (!s) s = 1;
  }
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next() >> 11) * n) >> 53); }
  bool chance(unsigned percent) { return below(100) < percent; }
};

// ---- Names (ids are this generator's; fields as the runtime records them) ----
constexpr uint32_t kIo = fmt::kFieldFd | fmt::kFieldPath | fmt::kFieldOffset | fmt::kFieldSize | fmt::kFieldRet | fmt::kFieldErrno;
constexpr uint32_t kFdOp = fmt::kFieldFd | fmt::kFieldPath | fmt::kFieldRet | fmt::kFieldErrno;
constexpr uint32_t kPathOp = fmt::kFieldPath | fmt::kFieldRet | fmt::kFieldErrno;
constexpr uint32_t kSeek = fmt::kFieldFd | fmt::kFieldPath | fmt::kFieldOffset | fmt::kFieldRet | fmt::kFieldErrno;

enum Name : uint32_t { kOpen64 = 1, kClose, kRead, kWrite, kPread64, kStat, kFstat, kLseek64, kFsync, kFopen, kFgets, kFclose, kNumNames };
struct NameDef {
  const char* name;
  const char* cat;
  uint32_t fields;
};
const NameDef kNames[kNumNames] = {
    {},
    {"open64", "POSIX", kFdOp},  {"close", "POSIX", kFdOp},  {"read", "POSIX", kIo},     {"write", "POSIX", kIo},
    {"pread64", "POSIX", kIo},   {"stat", "POSIX", kPathOp}, {"fstat", "POSIX", kFdOp},  {"lseek64", "POSIX", kSeek},
    {"fsync", "POSIX", kFdOp},   {"fopen", "STDIO", kFdOp},  {"fgets", "STDIO", kIo},    {"fclose", "STDIO", kFdOp},
};

constexpr int kEpochs = 10, kStepsPerEpoch = 1000;
constexpr int kTrainShards = 256, kValShards = 32, kLibs = 40;
constexpr int64_t kShardSize = 256ll << 20;
constexpr int64_t kMiB = 1 << 20;

// String ids of one file, assigned in the order they are defined.
struct Strings {
  uint32_t next = 1;
  uint32_t name_sid[kNumNames] = {}, cat_posix = 0, cat_stdio = 0;
  std::vector<uint32_t> train, val, libs, ckpt;
  uint32_t config = 0, log = 0;
  uint32_t k_epoch = 0, k_step = 0, k_stage = 0, v_train = 0, v_val = 0;
  std::vector<uint32_t> thread_names;
};

uint32_t add(fmt::ByteSink& d, Strings& s, uint32_t& entries, const std::string& v) {
  uint32_t id = s.next++;
  fmt::dict_string(d, id, v);
  ++entries;
  return id;
}

uint32_t ctx_id(int epoch, int step, bool val) {
  return 1 + static_cast<uint32_t>((epoch * kStepsPerEpoch + step) * 2 + (val ? 1 : 0));
}

// One thread's event source: episodes (a sample load, a checkpoint, ...) are
// expanded into a small queue of events with consistent times.
class ThreadGen {
 public:
  // Epochs and steps follow trace time: the run spans [origin, origin + span),
  // so all threads of a process change epoch and step together.
  ThreadGen(const Strings& s, int rank, int index, uint32_t tid, uint64_t origin, double span, uint64_t t0,
            uint64_t seed, double speedup)
      : s_(s), rank_(rank), index_(index), tid_(tid), origin_(origin), span_(span), inv_speed_(1.0 / speedup), t_(t0),
        rng_(seed) {
    if (index_ == 0) startup();
  }
  uint32_t tid() const { return tid_; }
  uint64_t now() const { return t_; }

  // Fills up to n events that start before t_end; returns how many.
  size_t fill(fmt::EncodeEvent* out, size_t n, uint64_t t_end) {
    size_t k = 0;
    while (k < n) {
      if (head_ == queue_.size()) {
        queue_.clear();
        head_ = 0;
        episode();
      }
      if (queue_[head_].start >= t_end) break;
      out[k++] = queue_[head_++];
    }
    return k;
  }

 private:
  // Epoch/step/stage at the thread's current time.
  void position(int& epoch, int& step, bool& val) const {
    double f = (static_cast<double>(t_ - origin_) / span_) * kEpochs;
    if (f < 0) f = 0;
    epoch = std::min(static_cast<int>(f), kEpochs - 1);
    double in = std::min(f - epoch, 0.999999);
    step = static_cast<int>(in * kStepsPerEpoch);
    val = in >= 0.9;
  }
  void push(uint32_t name, uint32_t path, int32_t fd, int64_t offset, int64_t size, int64_t ret, int32_t err,
            uint64_t dur) {
    int epoch, step;
    bool val;
    position(epoch, step, val);
    t_ += scaled(150 + rng_.below(index_ == 0 ? 4000 : 1200));  // gap since the previous call
    dur = std::max<uint64_t>(1, scaled(dur));
    queue_.push_back({t_, t_ + dur, offset, size, ret, name, path, ctx_id(epoch, step, val), fd, err});
    t_ += dur;
  }
  uint64_t scaled(uint64_t ns) const { return static_cast<uint64_t>(static_cast<double>(ns) * inv_speed_); }
  uint64_t io_dur(int64_t bytes) { return 400 + static_cast<uint64_t>(bytes) / 3 + rng_.below(800 + bytes / 8); }

  void startup() {
    // Config through STDIO, then the interpreter's shared libraries.
    push(kFopen, s_.config, 3, -1, -1, 3, 0, 4000 + rng_.below(3000));
    int64_t off = 0;
    for (int i = 0; i < 24; ++i) {
      int64_t n = 20 + static_cast<int64_t>(rng_.below(60));
      push(kFgets, s_.config, 3, off, 4096, n, 0, 200 + rng_.below(300));
      off += n;
    }
    push(kFclose, s_.config, 3, -1, -1, 0, 0, 1500);
    for (int i = 0; i < kLibs; ++i) {
      uint32_t p = s_.libs[i];
      push(kStat, p, -1, -1, -1, 0, 0, 1200 + rng_.below(1500));
      push(kOpen64, p, 3, -1, -1, 3, 0, 2500 + rng_.below(2000));
      push(kRead, p, 3, 0, 832, 832, 0, 900 + rng_.below(500));
      push(kFstat, p, 3, -1, -1, 0, 0, 600 + rng_.below(400));
      push(kClose, p, 3, -1, -1, 0, 0, 700 + rng_.below(400));
    }
  }

  void episode() {
    if (index_ == 0) main_episode();
    else loader_episode();
  }

  void loader_episode() {
    int epoch, step;
    bool val;
    position(epoch, step, val);
    uint32_t p = val ? s_.val[rng_.below(kValShards)] : s_.train[rng_.below(kTrainShards)];
    int32_t fd = 10 + index_;
    if (rng_.chance(10)) push(kStat, p, -1, -1, -1, 0, 0, 1500 + rng_.below(2500));
    push(kOpen64, p, fd, -1, -1, fd, 0, 3000 + rng_.below(4000));
    if (rng_.chance(50)) push(kFstat, p, fd, -1, -1, 0, 0, 500 + rng_.below(500));
    static constexpr int64_t kSizes[10] = {4096, 4096, 4096, 4096, 65536, 65536, 65536, 131072, 131072, kMiB};
    int64_t size = kSizes[rng_.below(10)];
    int k = 1 + static_cast<int>(rng_.below(8));
    int64_t off = static_cast<int64_t>(rng_.below(static_cast<uint64_t>(kShardSize / size))) * size;
    for (int j = 0; j < k; ++j) {
      int64_t ret = off + size <= kShardSize ? size : std::max<int64_t>(kShardSize - off, 0);
      push(kPread64, p, fd, off, size, ret, 0, io_dur(ret));
      off += ret;
    }
    push(kClose, p, fd, -1, -1, 0, 0, 800 + rng_.below(700));
  }

  void main_episode() {
    int epoch, step;
    bool val;
    position(epoch, step, val);
    if (rank_ == 0 && epoch != last_ckpt_epoch_ && val) {  // checkpoint once per epoch, during validation
      last_ckpt_epoch_ = epoch;
      uint32_t p = s_.ckpt[epoch];
      push(kOpen64, p, 20, -1, -1, 20, 0, 8000 + rng_.below(4000));
      for (int i = 0; i < 64; ++i) push(kWrite, p, 20, i * kMiB, kMiB, kMiB, 0, 250000 + rng_.below(100000));
      push(kFsync, p, 20, -1, -1, 0, 0, 20'000'000 + rng_.below(5'000'000));
      push(kClose, p, 20, -1, -1, 0, 0, 2000);
      return;
    }
    uint64_t r = rng_.below(100);
    if (r < 60) {  // streaming read of a shard, 1 MiB at a time
      if (stream_path_ == 0) {
        stream_path_ = s_.train[(rank_ * 31 + stream_n_++) % kTrainShards];
        stream_off_ = 0;
        push(kOpen64, stream_path_, 4, -1, -1, 4, 0, 3000 + rng_.below(3000));
      }
      int64_t ret = std::min(kMiB, kShardSize - stream_off_);
      push(kRead, stream_path_, 4, stream_off_, kMiB, ret, 0, io_dur(ret));
      stream_off_ += ret;
      if (ret == 0) {
        push(kClose, stream_path_, 4, -1, -1, 0, 0, 900);
        stream_path_ = 0;
      }
    } else if (r < 85) {  // log line
      int64_t n = 60 + static_cast<int64_t>(rng_.below(140));
      push(kWrite, s_.log, 5, log_off_, n, n, 0, 1500 + rng_.below(2000));
      log_off_ += n;
    } else if (r < 95) {  // metadata probes; some miss
      bool miss = rng_.chance(3);
      uint32_t p = rng_.chance(50) ? s_.libs[rng_.below(kLibs)] : s_.train[rng_.below(kTrainShards)];
      push(kStat, p, -1, -1, -1, miss ? -1 : 0, miss ? 2 : 0, 1200 + rng_.below(2000));
    } else if (stream_path_ != 0) {  // position query on the stream
      push(kLseek64, stream_path_, 4, stream_off_, -1, stream_off_, 0, 300 + rng_.below(200));
    } else {
      push(kFstat, s_.log, 5, -1, -1, 0, 0, 500 + rng_.below(300));
    }
  }

  const Strings& s_;
  int rank_, index_;
  uint32_t tid_;
  uint64_t origin_;
  double span_, inv_speed_;
  uint64_t t_;
  Rng rng_;
  std::vector<fmt::EncodeEvent> queue_;
  size_t head_ = 0;
  int last_ckpt_epoch_ = -1;
  uint32_t stream_path_ = 0;
  int stream_n_ = 0;
  int64_t stream_off_ = 0, log_off_ = 0;
};

constexpr int64_t kLauncherPid = 40000;
constexpr uint64_t kBaseMono = 1'000'000'000'000ull;  // 1000 s of uptime

struct FileResult {
  uint64_t events = 0, bytes = 0;
};

FileResult write_process(const Options& o, int rank, uint64_t events, uint64_t start_wall) {
  const int64_t pid = kLauncherPid + 1 + rank;
  const uint64_t start_mono = kBaseMono + static_cast<uint64_t>(rank) * 1'000'000;
  std::string path = o.out + "/gen-node0-" + std::to_string(pid) + "-" + std::to_string(start_mono) + fmt::kFileSuffix;
  TraceFileWriter w(path, o.block);

  std::string rank_s = std::to_string(rank);
  fmt::ProcessRecord pr;
  pr.pid = pid;
  pr.ppid = kLauncherPid;
  pr.rank = rank;
  pr.start_wall_ns = start_wall + static_cast<uint64_t>(rank) * 1'000'000;
  pr.start_mono_ns = start_mono;
  pr.start_ticks = start_mono;
  pr.tick_q32 = 0;
  pr.hostname = "gen-node0";
  pr.exe = "/usr/bin/python3.11";
  pr.version = "gen_trace";
  pr.mode = "trace";
  pr.argv = {"python3", "train.py", "--rank", rank_s, "--epochs", "10"};
  w.process(pr);

  // Dictionary: names, paths, tag keys/values, thread names, contexts.
  Strings s;
  fmt::ByteSink& d = w.dict();
  uint32_t entries = 0;
  s.cat_posix = add(d, s, entries, "POSIX");
  s.cat_stdio = add(d, s, entries, "STDIO");
  for (uint32_t n = 1; n < kNumNames; ++n) s.name_sid[n] = add(d, s, entries, kNames[n].name);
  char buf[256];
  for (int i = 0; i < kTrainShards; ++i) {
    std::snprintf(buf, sizeof(buf), "/lustre/datasets/imagenet/train/shard-%04d.tar", i);
    s.train.push_back(add(d, s, entries, buf));
  }
  for (int i = 0; i < kValShards; ++i) {
    std::snprintf(buf, sizeof(buf), "/lustre/datasets/imagenet/val/shard-%04d.tar", i);
    s.val.push_back(add(d, s, entries, buf));
  }
  for (int i = 0; i < kLibs; ++i) {
    std::snprintf(buf, sizeof(buf), "/usr/lib/python3/dist-packages/torch/lib/libtorch_part%02d.so", i);
    s.libs.push_back(add(d, s, entries, buf));
  }
  for (int e = 0; e < kEpochs; ++e) {
    std::snprintf(buf, sizeof(buf), "/lustre/scratch/run42/checkpoints/model-epoch%02d.pt", e);
    s.ckpt.push_back(add(d, s, entries, buf));
  }
  s.config = add(d, s, entries, "/home/user/run42/config.yaml");
  std::snprintf(buf, sizeof(buf), "/lustre/scratch/run42/logs/rank%d.log", rank);
  s.log = add(d, s, entries, buf);
  s.k_epoch = add(d, s, entries, "epoch");
  s.k_step = add(d, s, entries, "step");
  s.k_stage = add(d, s, entries, "stage");
  s.v_train = add(d, s, entries, "train");
  s.v_val = add(d, s, entries, "val");
  for (int t = 0; t < o.threads; ++t) {
    std::snprintf(buf, sizeof(buf), t == 0 ? "MainThread" : "loader-%d", t);
    s.thread_names.push_back(add(d, s, entries, buf));
  }
  for (uint32_t n = 1; n < kNumNames; ++n, ++entries)
    fmt::dict_name(d, n, s.name_sid[n], std::strcmp(kNames[n].cat, "STDIO") == 0 ? s.cat_stdio : s.cat_posix,
                   kNames[n].fields, fmt::EventKind::kComplete);
  for (int e = 0; e < kEpochs; ++e)
    for (int st = 0; st < kStepsPerEpoch; ++st)
      for (int v = 0; v < 2; ++v, ++entries) {
        fmt::TagEntry tags[3] = {{s.k_epoch, true, e}, {s.k_step, true, e * kStepsPerEpoch + st},
                                 {s.k_stage, false, v ? s.v_val : s.v_train}};
        fmt::dict_context(d, ctx_id(e, st, v), tags, 3);
      }
  for (int t = 0; t < o.threads; ++t, ++entries) fmt::dict_thread(d, static_cast<uint32_t>(pid + t), s.thread_names[t]);
  w.flush_dict(entries);

  // Threads' events in blocks, laid out as the runtime's writer does: a busy
  // thread's ring is written whenever it holds a block's worth, the others at
  // the periodic flush (every second of trace time), so blocks of different
  // threads cover overlapping windows of at most about a second.
  std::vector<fmt::EncodeEvent> ev(o.block);
  auto simulate = [&](double span, uint64_t events, auto&& sink) {
    std::vector<ThreadGen> gens;
    for (int t = 0; t < o.threads; ++t)
      gens.emplace_back(s, rank, t, static_cast<uint32_t>(pid + t), start_mono, span, start_mono + 50'000 + t * 1000,
                        o.seed * 1000003 + rank * 1009 + t, o.speedup);
    uint64_t done = 0, full_done = 0, full_ns = 0;
    for (uint64_t flush_at = start_mono + 1'000'000'000; done < events; flush_at += 1'000'000'000) {
      for (auto& g : gens) {
        while (done < events) {
          size_t want = static_cast<size_t>(std::min<uint64_t>(o.block, events - done));
          size_t n = g.fill(ev.data(), want, flush_at);
          if (n) sink(g.tid(), n);
          done += n;
          if (n < want) break;  // caught up with the flush time
        }
      }
      if (done < events) full_done = done, full_ns = flush_at - start_mono;  // a complete window
    }
    if (full_done == 0) {  // less than one window: the threads' clocks
      full_done = done;
      for (auto& g : gens) full_ns = std::max(full_ns, g.now() - start_mono);
    }
    return std::pair<uint64_t, uint64_t>(full_done, full_ns);
  };
  // A dry run of a sample measures the event rate, so epochs can be laid out
  // over the whole run's time span.
  double span = 1e9;
  if (events) {
    auto [n, ns] = simulate(1e18, std::min<uint64_t>(events, 2'000'000), [](uint32_t, size_t) {});
    if (n) span = double(ns) * events / n;
  }
  simulate(std::max(span, 1e6), events, [&](uint32_t tid, size_t n) { w.events(tid, ev.data(), n); });
  w.finish();
  return {w.events_written(), w.bytes()};
}

void usage() {
  std::fprintf(stderr,
               "usage: gen_trace -o DIR [-n EVENTS=100M] [-p PROCS=8] [-t THREADS=4] [-j JOBS=ncpu]\n"
               "                 [--seed N] [--block EVENTS_PER_BLOCK=8192] [--speedup F=1] [--force]\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto val = [&]() -> const char* {
        if (i + 1 >= argc) throw std::runtime_error("missing value for " + a);
        return argv[++i];
      };
      if (a == "-o" || a == "--output") o.out = val();
      else if (a == "-n" || a == "--events") o.events = parse_count(val());
      else if (a == "-p" || a == "--procs") o.procs = std::atoi(val());
      else if (a == "-t" || a == "--threads") o.threads = std::atoi(val());
      else if (a == "-j" || a == "--jobs") o.jobs = std::atoi(val());
      else if (a == "--seed") o.seed = parse_count(val());
      else if (a == "--block") o.block = parse_count(val());
      else if (a == "--force") o.force = true;
      else if (a == "--speedup") o.speedup = std::strtod(val(), nullptr);
      else if (a == "-h" || a == "--help") { usage(); return 0; }
      else throw std::runtime_error("unknown argument " + a);
    }
    if (o.out.empty()) { usage(); return 2; }
    if (o.procs < 1 || o.threads < 1 || o.block < 1 || o.block > 1'000'000 || !(o.speedup > 0))
      throw std::runtime_error("bad -p/-t/--block/--speedup");
    fs::create_directories(o.out);
    for (auto& e : fs::directory_iterator(o.out)) {
      if (e.path().extension() != fmt::kFileSuffix) continue;
      if (!o.force) throw std::runtime_error(o.out + " already holds trace files (use --force to replace them)");
      fs::remove(e.path());
    }
    int jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    jobs = std::min(jobs, o.procs);
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    const uint64_t wall = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + now.tv_nsec;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<FileResult> results(o.procs);
    std::atomic<int> next{0};
    std::atomic<bool> failed{false};
    std::vector<std::thread> pool;
    for (int j = 0; j < jobs; ++j)
      pool.emplace_back([&] {
        for (int r; (r = next.fetch_add(1)) < o.procs && !failed;) {
          uint64_t n = o.events / o.procs + (r == 0 ? o.events % o.procs : 0);
          try {
            results[r] = write_process(o, r, n, wall);
          } catch (const std::exception& e) {
            std::fprintf(stderr, "gen_trace: %s\n", e.what());
            failed = true;
          }
        }
      });
    for (auto& t : pool) t.join();
    if (failed) return 1;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t events = 0, bytes = 0;
    for (auto& r : results) events += r.events, bytes += r.bytes;
    std::printf("gen_trace: %s: %" PRIu64 " events, %d processes x %d threads, %" PRIu64 " bytes (%.3f B/event), %.1f s (%.1f M events/s)\n",
                o.out.c_str(), events, o.procs, o.threads, bytes, events ? double(bytes) / events : 0.0, secs,
                events / secs / 1e6);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gen_trace: %s\n", e.what());
    return 1;
  }
  return 0;
}
