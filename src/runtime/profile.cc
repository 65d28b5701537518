#include "runtime/profile.h"

#include <array>
#include <cstring>

#include "analysis/counters.h"
#include "runtime/state.h"

namespace strata::runtime {
namespace {

namespace c = strata::counters;

struct Mapping {
  c::Module module;
  c::Op op;
  bool positional;
};

// The counter engine's view of each recorded function (kNone: not counted).
constexpr Mapping map_fn(Fn fn) {
  using M = c::Module;
  using O = c::Op;
  switch (fn) {
    case Fn::open: case Fn::open64: case Fn::openat: case Fn::openat64: case Fn::creat: case Fn::creat64:
      return {M::kPosix, O::kOpen, false};
    case Fn::close: return {M::kPosix, O::kClose, false};
    case Fn::read: case Fn::readv: return {M::kPosix, O::kRead, false};
    case Fn::pread: case Fn::pread64: case Fn::preadv: case Fn::preadv64: case Fn::preadv2:
      return {M::kPosix, O::kRead, true};
    case Fn::write: case Fn::writev: return {M::kPosix, O::kWrite, false};
    case Fn::pwrite: case Fn::pwrite64: case Fn::pwritev: case Fn::pwritev64: case Fn::pwritev2:
      return {M::kPosix, O::kWrite, true};
    case Fn::lseek: case Fn::lseek64: return {M::kPosix, O::kSeek, false};
    case Fn::stat: case Fn::stat64: case Fn::lstat: case Fn::lstat64: case Fn::fstat: case Fn::fstat64:
    case Fn::fstatat: case Fn::fstatat64: case Fn::statx:
      return {M::kPosix, O::kStat, false};
    case Fn::fsync: return {M::kPosix, O::kFsync, false};
    case Fn::fdatasync: return {M::kPosix, O::kFdatasync, false};
    case Fn::mmap: case Fn::mmap64: return {M::kPosix, O::kMmap, false};
    case Fn::rename: case Fn::renameat: case Fn::renameat2: return {M::kPosix, O::kRenameSrc, false};
    case Fn::dup: case Fn::dup2: case Fn::dup3: case Fn::fcntl: return {M::kPosix, O::kDup, false};
    case Fn::fopen: case Fn::fopen64: case Fn::freopen: case Fn::freopen64: return {M::kStdio, O::kOpen, false};
    case Fn::fdopen: return {M::kStdio, O::kFdopen, false};
    case Fn::fclose: return {M::kStdio, O::kClose, false};
    case Fn::fread: case Fn::fgets: case Fn::getline: case Fn::getdelim: case Fn::fgetc: case Fn::getc:
    case Fn::getchar: case Fn::getw: case Fn::fscanf: case Fn::vfscanf:
      return {M::kStdio, O::kRead, false};
    case Fn::fwrite: case Fn::fputs: case Fn::fprintf: case Fn::vfprintf: case Fn::printf: case Fn::vprintf:
    case Fn::fputc: case Fn::putc: case Fn::putchar: case Fn::puts: case Fn::putw:
      return {M::kStdio, O::kWrite, false};
    case Fn::fseek: case Fn::fseeko: case Fn::fseeko64: case Fn::fsetpos: case Fn::fsetpos64: case Fn::rewind:
      return {M::kStdio, O::kSeek, false};
    case Fn::fflush: return {M::kStdio, O::kFlush, false};
    default: return {M::kPosix, O::kNone, false};
  }
}

// map_fn as a table: the writer looks up every profiled event.
constexpr auto kMappings = [] {
  std::array<Mapping, kNumFns> table{};
  for (uint32_t i = 0; i < kNumFns; ++i) table[i] = map_fn(static_cast<Fn>(i));
  return table;
}();

c::CounterEngine* engine = nullptr;

}  // namespace

void profile_consume(const RawEvent& e) {
  if (e.name >= kNumFns) return;  // application events carry no file counters
  const Mapping& m = kMappings[e.name];
  if (m.op == c::Op::kNone) return;
  if (!engine) engine = new c::CounterEngine();
  c::CounterEvent ce;
  ce.module = m.module;
  ce.op = m.op;
  ce.positional = m.positional;
  bool data = m.op == c::Op::kRead || m.op == c::Op::kWrite;
  ce.ok = e.err == 0 && (m.module == c::Module::kStdio && data ? e.ret > 0 : e.ret >= 0);
  ce.fd = e.fd;
  if (m.op == c::Op::kDup) {
    ce.old_fd = e.fd;
    ce.fd = static_cast<int32_t>(e.ret);
  } else if (m.op == c::Op::kOpen || m.op == c::Op::kFdopen) {
    ce.fd = static_cast<int32_t>(e.ret);
  }
  ce.file = e.path ? e.path : c::kNoFile;
  ce.offset = m.op == c::Op::kSeek && m.module == c::Module::kPosix ? e.ret : e.offset;
  ce.bytes = data && e.ret > 0 ? e.ret : 0;
  ce.t1 = static_cast<double>(ticks_to_ns(e.start)) * 1e-9;
  ce.t2 = static_cast<double>(ticks_to_ns(e.end)) * 1e-9;
  engine->on_event(ce);
}

// PROFILE payload: varint nrecords, then per record: u8 module (0 POSIX,
// 1 STDIO), varint path sid, varint ncounters, zigzag counters, varint
// nfcounters, f64 fcounters (little-endian IEEE 754). Counter order is the
// Darshan order of src/analysis/counters.h.
void profile_encode(format::ByteSink& out, uint32_t& records) {
  out.clear();
  records = 0;
  if (!engine) {
    out.put_varint(0);
    return;
  }
  engine->finalize();
  const auto& posix = engine->posix();
  const auto& stdio = engine->stdio();
  out.put_varint(posix.size() + stdio.size());
  auto put_doubles = [&](const double* v, size_t n) {
    out.put_varint(n);
    out.put_bytes(v, n * sizeof(double));
  };
  for (const auto& r : posix) {
    out.put_u8(0);
    out.put_varint(r.file == c::kNoFile ? 0 : r.file);
    out.put_varint(c::POSIX_NUM_INDICES);
    for (int64_t v : r.counters) out.put_zigzag(v);
    put_doubles(r.fcounters, c::POSIX_F_NUM_INDICES);
  }
  for (const auto& r : stdio) {
    out.put_u8(1);
    out.put_varint(r.file == c::kNoFile ? 0 : r.file);
    out.put_varint(c::STDIO_NUM_INDICES);
    for (int64_t v : r.counters) out.put_zigzag(v);
    put_doubles(r.fcounters, c::STDIO_F_NUM_INDICES);
  }
  records = static_cast<uint32_t>(posix.size() + stdio.size());
}

void profile_reset() {
  // The parent's counters are the parent's: the child starts from zero. The
  // old engine is left allocated (freeing memory another thread of the parent
  // allocated is fine, but this keeps the child handler minimal).
  engine = nullptr;
}

}  // namespace strata::runtime
