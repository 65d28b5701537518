// The interposer's cost measured inside one traced process, where the host's
// drifting load cancels out: Google Benchmark interleaves short repetitions of
//   BM_PreadSyscall     the pread64 system call itself (syscall(2): what the
//                       call costs without strata; glibc's own wrapper adds
//                       ~10 instructions to it in a single-threaded program)
//   BM_PreadInterposed  pread() through strata's interposer, recorded
// on 4 KiB reads of a file in page cache at the offsets of pread_bench.c, and
//   BM_StatSyscall      the newfstatat system call on one of 16,384 paths in turn
//   BM_StatInterposed   stat() through strata: the path is made absolute and
//                       looked up among the process's known paths (interned)
// on paths beside FILE that do not exist (a data loader probing for files),
//   BM_NewPathSyscall   the same system call on a path never used before
//   BM_NewPathInterposed  stat() of a path strata has never seen: checked
//                       for "//", "/./", "/../", matched against the
//                       exclusions and interned (a new string-table entry)
// (both format the path: only their difference means anything).
// Added cost per call = the difference of the two medians. Run it under
// strata (bench/run does, in trace and in profile mode):
//
//   build-bench/bin/strata run -q -m profile -o /tmp/hp -- build-bench/bin/hotpath_bench FILE
//       --benchmark_repetitions=15 --benchmark_enable_random_interleaving=true   (one line)
//
// Without strata, BM_PreadInterposed is glibc's pread.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

int g_fd = -1;
constexpr size_t kBlock = 4096;
constexpr size_t kBlocks = 16384;  // a 64 MiB file, as pread_bench

template <class Read>
void pread_loop(benchmark::State& state, Read read) {
  alignas(64) static char buf[kBlock];
  size_t i = 0;
  for (auto _ : state) {
    const off_t off = static_cast<off_t>((i++ * 7919 % kBlocks) * kBlock);
    benchmark::DoNotOptimize(read(buf, off));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_PreadSyscall(benchmark::State& state) {
  pread_loop(state, [](char* buf, off_t off) { return syscall(SYS_pread64, g_fd, buf, kBlock, off); });
}
BENCHMARK(BM_PreadSyscall)->MinTime(0.2);

void BM_PreadInterposed(benchmark::State& state) {
  pread_loop(state, [](char* buf, off_t off) { return pread(g_fd, buf, kBlock, off); });
}
BENCHMARK(BM_PreadInterposed)->MinTime(0.2);

std::vector<std::string> g_paths;  // 16,384 paths that do not exist

template <class Stat>
void stat_loop(benchmark::State& state, Stat stat_path) {
  struct stat st;
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(stat_path(g_paths[i++ % g_paths.size()].c_str(), &st));
  state.SetItemsProcessed(state.iterations());
}

void BM_StatSyscall(benchmark::State& state) {
  stat_loop(state, [](const char* p, struct stat* st) { return syscall(SYS_newfstatat, AT_FDCWD, p, st, 0); });
}
BENCHMARK(BM_StatSyscall)->MinTime(0.2);

void BM_StatInterposed(benchmark::State& state) {
  stat_loop(state, [](const char* p, struct stat* st) { return stat(p, st); });
}
BENCHMARK(BM_StatInterposed)->MinTime(0.2);

// A path never used before in this process, beside the missing ones.
template <class Stat>
void new_path_loop(benchmark::State& state, Stat stat_path) {
  static size_t next = 0;
  const std::string& base = g_paths[0];
  char path[4096];
  struct stat st;
  for (auto _ : state) {
    std::snprintf(path, sizeof path, "%s.new-%zu", base.c_str(), next++);
    benchmark::DoNotOptimize(stat_path(path, &st));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_NewPathSyscall(benchmark::State& state) {
  new_path_loop(state, [](const char* p, struct stat* st) { return syscall(SYS_newfstatat, AT_FDCWD, p, st, 0); });
}
BENCHMARK(BM_NewPathSyscall)->MinTime(0.2);

void BM_NewPathInterposed(benchmark::State& state) {
  new_path_loop(state, [](const char* p, struct stat* st) { return stat(p, st); });
}
BENCHMARK(BM_NewPathInterposed)->MinTime(0.2);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: hotpath_bench FILE(64 MiB) [--benchmark_* options]\n");
    return 2;
  }
  g_fd = open(argv[1], O_RDONLY);
  if (g_fd < 0) {
    std::perror(argv[1]);
    return 1;
  }
  static char warm[kBlock];
  for (size_t b = 0; b < kBlocks; ++b)
    if (pread(g_fd, warm, kBlock, static_cast<off_t>(b * kBlock)) != static_cast<ssize_t>(kBlock)) {
      std::fprintf(stderr, "%s: shorter than 64 MiB\n", argv[1]);
      return 1;
    }
  const std::string file = argv[1];
  const std::string dir = file.find('/') == std::string::npos ? "." : file.substr(0, file.rfind('/'));
  for (int i = 0; i < 16384; ++i) g_paths.push_back(dir + "/strata-hotpath-no-such-file-" + std::to_string(i));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  close(g_fd);
  return 0;
}
