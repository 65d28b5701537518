// The functions the runtime records, with their layer and which event columns
// they fill. Name ids in a trace file are these enum values (1-based); the
// runtime writes them as DICT name entries at the start of every file.
#pragma once

#include <cstdint>

#include "analysis/counters.h"
#include "format/format.h"

namespace strata::runtime {

namespace f = strata::format;
inline constexpr uint32_t kIo = f::kFieldFd | f::kFieldPath | f::kFieldOffset | f::kFieldSize |
                                f::kFieldRet | f::kFieldErrno;
inline constexpr uint32_t kFdOp = f::kFieldFd | f::kFieldPath | f::kFieldRet | f::kFieldErrno;
inline constexpr uint32_t kPathOp = f::kFieldPath | f::kFieldRet | f::kFieldErrno;
inline constexpr uint32_t kSeek = f::kFieldFd | f::kFieldPath | f::kFieldOffset | f::kFieldRet | f::kFieldErrno;
inline constexpr uint32_t kSized = f::kFieldFd | f::kFieldPath | f::kFieldSize | f::kFieldRet | f::kFieldErrno;
inline constexpr uint32_t kProc = f::kFieldRet | f::kFieldErrno;
// Stream calls whose requested size is not known up front (getline, fprintf,
// fscanf).
inline constexpr uint32_t kStreamIo = kIo & ~f::kFieldSize;
// Mappings named by address: path from the mapping table, no descriptor.
inline constexpr uint32_t kMapping = f::kFieldPath | f::kFieldSize | f::kFieldRet | f::kFieldErrno;
// *at calls: a path, or a descriptor with AT_EMPTY_PATH.
inline constexpr uint32_t kAtOp = kPathOp | f::kFieldFd;
// open family: the size column holds the mode argument (0 without O_CREAT).
inline constexpr uint32_t kOpenOp = kFdOp | f::kFieldSize;
// The second event of a successful rename: path = the new name, offset
// column = string id of the source path (the rename event's path).
inline constexpr uint32_t kRenameTarget = kPathOp | f::kFieldOffset;
inline constexpr uint32_t kProcPath = f::kFieldPath | f::kFieldRet | f::kFieldErrno;
// Smart mode's per-iteration marker (smart.h): offset = the iteration's
// index, size = 1 when it is written in full, ret = the thread's main loop id.
inline constexpr uint32_t kIteration = f::kFieldOffset | f::kFieldSize | f::kFieldRet | f::kFieldErrno;

// X(identifier, "recorded name", layer, fields, counter op, positional)
//
// THE table of recorded functions: the runtime (interposers, profile mode),
// the analyzer (analysis/model.cc: classify) and Python (strata._reader.
// functions(), used by strata.dask) all read it. `counter op` is the
// counters::Op the Darshan counter engine applies (None: not counted), in the
// counter module of the layer (kLayerInfo); `positional` marks calls whose
// offset column is the access offset (pread family; the kernel copies, whose
// offset is `*off` when the call names one, else the descriptor's tracked
// offset: the counter engine takes it as it is); data (read/write) versus
// metadata follows from the op. Names other tools record for the same calls
// (DFTracer, glibc internals) are in kFnAliases below.
#define STRATA_FUNCTIONS(X) \
  X(open, "open", POSIX, kOpenOp, Open, 0)                          \
  X(open64, "open64", POSIX, kOpenOp, Open, 0)                      \
  X(openat, "openat", POSIX, kOpenOp, Open, 0)                      \
  X(openat64, "openat64", POSIX, kOpenOp, Open, 0)                  \
  X(creat, "creat", POSIX, kOpenOp, Open, 0)                        \
  X(creat64, "creat64", POSIX, kOpenOp, Open, 0)                    \
  X(close, "close", POSIX, kFdOp, Close, 0)                       \
  X(read, "read", POSIX, kIo, Read, 0)                            \
  X(write, "write", POSIX, kIo, Write, 0)                         \
  X(pread, "pread", POSIX, kIo, Read, 1)                          \
  X(pread64, "pread64", POSIX, kIo, Read, 1)                      \
  X(pwrite, "pwrite", POSIX, kIo, Write, 1)                       \
  X(pwrite64, "pwrite64", POSIX, kIo, Write, 1)                   \
  X(readv, "readv", POSIX, kIo, Read, 0)                          \
  X(writev, "writev", POSIX, kIo, Write, 0)                       \
  X(preadv, "preadv", POSIX, kIo, Read, 1)                        \
  X(preadv64, "preadv64", POSIX, kIo, Read, 1)                    \
  X(pwritev, "pwritev", POSIX, kIo, Write, 1)                     \
  X(pwritev64, "pwritev64", POSIX, kIo, Write, 1)                 \
  X(preadv2, "preadv2", POSIX, kIo, Read, 1)                      \
  X(pwritev2, "pwritev2", POSIX, kIo, Write, 1)                   \
  X(lseek, "lseek", POSIX, kSeek, Seek, 0)                        \
  X(lseek64, "lseek64", POSIX, kSeek, Seek, 0)                    \
  X(fsync, "fsync", POSIX, kFdOp, Fsync, 0)                       \
  X(fdatasync, "fdatasync", POSIX, kFdOp, Fdatasync, 0)           \
  X(sync_file_range, "sync_file_range", POSIX, kIo, None, 0)      \
  X(ftruncate, "ftruncate", POSIX, kSized, None, 0)               \
  X(ftruncate64, "ftruncate64", POSIX, kSized, None, 0)           \
  X(fallocate, "fallocate", POSIX, kIo, None, 0)                  \
  X(fallocate64, "fallocate64", POSIX, kIo, None, 0)              \
  X(posix_fallocate, "posix_fallocate", POSIX, kIo, None, 0)      \
  X(posix_fallocate64, "posix_fallocate64", POSIX, kIo, None, 0)  \
  X(stat, "stat", POSIX, kPathOp, Stat, 0)                        \
  X(stat64, "stat64", POSIX, kPathOp, Stat, 0)                    \
  X(lstat, "lstat", POSIX, kPathOp, Stat, 0)                      \
  X(lstat64, "lstat64", POSIX, kPathOp, Stat, 0)                  \
  X(fstat, "fstat", POSIX, kFdOp, Stat, 0)                        \
  X(fstat64, "fstat64", POSIX, kFdOp, Stat, 0)                    \
  X(fstatat, "fstatat", POSIX, kAtOp, Stat, 0)                    \
  X(fstatat64, "fstatat64", POSIX, kAtOp, Stat, 0)                \
  X(statx, "statx", POSIX, kAtOp, Stat, 0)                        \
  X(access, "access", POSIX, kPathOp, None, 0)                    \
  X(faccessat, "faccessat", POSIX, kPathOp, None, 0)              \
  X(mkdir, "mkdir", POSIX, kPathOp, None, 0)                      \
  X(mkdirat, "mkdirat", POSIX, kPathOp, None, 0)                  \
  X(rmdir, "rmdir", POSIX, kPathOp, None, 0)                      \
  X(unlink, "unlink", POSIX, kPathOp, None, 0)                    \
  X(unlinkat, "unlinkat", POSIX, kPathOp, None, 0)                \
  X(rename, "rename", POSIX, kPathOp, RenameSrc, 0)               \
  X(renameat, "renameat", POSIX, kPathOp, RenameSrc, 0)           \
  X(renameat2, "renameat2", POSIX, kPathOp, RenameSrc, 0)         \
  X(opendir, "opendir", POSIX, kFdOp, None, 0)                    \
  X(fdopendir, "fdopendir", POSIX, kFdOp, None, 0)                \
  X(readdir, "readdir", POSIX, kFdOp, None, 0)                    \
  X(readdir64, "readdir64", POSIX, kFdOp, None, 0)                \
  X(closedir, "closedir", POSIX, kFdOp, None, 0)                  \
  X(mmap, "mmap", POSIX, kIo, Mmap, 0)                            \
  X(mmap64, "mmap64", POSIX, kIo, Mmap, 0)                        \
  X(munmap, "munmap", POSIX, kMapping, None, 0)                   \
  X(msync, "msync", POSIX, kMapping, None, 0)                     \
  X(dup, "dup", POSIX, kFdOp, Dup, 0)                             \
  X(dup2, "dup2", POSIX, kFdOp, Dup, 0)                           \
  X(dup3, "dup3", POSIX, kFdOp, Dup, 0)                           \
  X(fcntl, "fcntl", POSIX, kFdOp, Dup, 0)                         \
  X(sendfile, "sendfile", POSIX, kIo, Read, 1)                    \
  X(sendfile64, "sendfile64", POSIX, kIo, Read, 1)                \
  X(copy_file_range, "copy_file_range", POSIX, kIo, Read, 1)      \
  X(fopen, "fopen", STDIO, kFdOp, Open, 0)                        \
  X(fopen64, "fopen64", STDIO, kFdOp, Open, 0)                    \
  X(fdopen, "fdopen", STDIO, kFdOp, Fdopen, 0)                    \
  X(freopen, "freopen", STDIO, kFdOp, Open, 0)                    \
  X(freopen64, "freopen64", STDIO, kFdOp, Open, 0)                \
  X(fclose, "fclose", STDIO, kFdOp, Close, 0)                     \
  X(fread, "fread", STDIO, kIo, Read, 0)                          \
  X(fwrite, "fwrite", STDIO, kIo, Write, 0)                       \
  X(fgets, "fgets", STDIO, kIo, Read, 0)                          \
  X(fputs, "fputs", STDIO, kIo, Write, 0)                         \
  X(getline, "getline", STDIO, kStreamIo, Read, 0)                \
  X(getdelim, "getdelim", STDIO, kStreamIo, Read, 0)              \
  X(fseek, "fseek", STDIO, kSeek, Seek, 0)                        \
  X(fseeko, "fseeko", STDIO, kSeek, Seek, 0)                      \
  X(fseeko64, "fseeko64", STDIO, kSeek, Seek, 0)                  \
  X(ftell, "ftell", STDIO, kSeek, None, 0)                        \
  X(ftello, "ftello", STDIO, kSeek, None, 0)                      \
  X(ftello64, "ftello64", STDIO, kSeek, None, 0)                  \
  X(rewind, "rewind", STDIO, kSeek, Seek, 0)                      \
  X(fflush, "fflush", STDIO, kFdOp, Flush, 0)                     \
  X(fprintf, "fprintf", STDIO, kStreamIo, Write, 0)               \
  X(vfprintf, "vfprintf", STDIO, kStreamIo, Write, 0)             \
  X(printf, "printf", STDIO, kStreamIo, Write, 0)                 \
  X(vprintf, "vprintf", STDIO, kStreamIo, Write, 0)               \
  X(fputc, "fputc", STDIO, kIo, Write, 0)                         \
  X(putc, "putc", STDIO, kIo, Write, 0)                           \
  X(putchar, "putchar", STDIO, kIo, Write, 0)                     \
  X(puts, "puts", STDIO, kIo, Write, 0)                           \
  X(putw, "putw", STDIO, kIo, Write, 0)                           \
  X(fgetc, "fgetc", STDIO, kIo, Read, 0)                          \
  X(getc, "getc", STDIO, kIo, Read, 0)                            \
  X(getchar, "getchar", STDIO, kIo, Read, 0)                      \
  X(getw, "getw", STDIO, kIo, Read, 0)                            \
  X(fscanf, "fscanf", STDIO, kStreamIo, Read, 0)                  \
  X(vfscanf, "vfscanf", STDIO, kStreamIo, Read, 0)                \
  X(ungetc, "ungetc", STDIO, kSeek, None, 0)                      \
  X(fsetpos, "fsetpos", STDIO, kSeek, Seek, 0)                    \
  X(fsetpos64, "fsetpos64", STDIO, kSeek, Seek, 0)                \
  X(fork, "fork", PROC, kProc, None, 0)                           \
  X(vfork, "vfork", PROC, kProc, None, 0)                         \
  X(posix_spawn, "posix_spawn", PROC, kProcPath, None, 0)         \
  X(posix_spawnp, "posix_spawnp", PROC, kProcPath, None, 0)       \
  X(execve, "execve", PROC, kProcPath, None, 0)                   \
  X(execv, "execv", PROC, kProcPath, None, 0)                     \
  X(execvp, "execvp", PROC, kProcPath, None, 0)                   \
  X(execvpe, "execvpe", PROC, kProcPath, None, 0)                 \
  X(execl, "execl", PROC, kProcPath, None, 0)                     \
  X(execlp, "execlp", PROC, kProcPath, None, 0)                   \
  X(execle, "execle", PROC, kProcPath, None, 0)                   \
  X(fexecve, "fexecve", PROC, kProcPath, None, 0)                 \
  X(exit, "exit", PROC, kProc, None, 0)                           \
  X(_exit, "_exit", PROC, kProc, None, 0)                         \
  X(_Exit, "_Exit", PROC, kProc, None, 0)                         \
  X(signal_flush, "signal", PROC, kProc, None, 0)                 \
  X(fileno, "fileno", POSIX, kFdOp, Fileno, 0)                    \
  X(rename_target, "rename.target", POSIX, kRenameTarget, RenameDst, 0) \
  X(mode, "mode", PROC, kProc, None, 0)                           \
  X(iteration, "iteration", PROC, kIteration, None, 0)             \
  X(execveat, "execveat", PROC, kProcPath, None, 0)               \
  X(sendfile_out, "sendfile.out", POSIX, kIo, Write, 1)           \
  X(copy_file_range_out, "copy_file_range.out", POSIX, kIo, Write, 1)

// X(identifier, category (the event's cat), STRATA_LAYERS item, has a Darshan
// counter module, counter module). Adding a layer is adding a row here, its
// functions above and one interposer file.
#define STRATA_LAYERS(X)                    \
  X(POSIX, "POSIX", "posix", true, kPosix)  \
  X(STDIO, "STDIO", "stdio", true, kStdio)  \
  X(PROC, "PROC", "proc", false, kPosix)

enum class Layer : uint8_t {
#define STRATA_LAYER_ENUM(id, cat, item, counted, module) id,
  STRATA_LAYERS(STRATA_LAYER_ENUM)
#undef STRATA_LAYER_ENUM
};

struct LayerInfo {
  const char* category;  // event category written in traces ("POSIX")
  const char* item;      // STRATA_LAYERS item ("posix")
  bool counted;          // has a Darshan counter module
  counters::Module module;
};

inline constexpr LayerInfo kLayerInfo[] = {
#define STRATA_LAYER_INFO(id, cat, item, counted, module) {cat, item, counted, counters::Module::module},
    STRATA_LAYERS(STRATA_LAYER_INFO)
#undef STRATA_LAYER_INFO
};
inline constexpr uint32_t kNumLayers = sizeof(kLayerInfo) / sizeof(kLayerInfo[0]);

// Categories other tools use for a layer (DFTracer: "sys" for POSIX calls,
// "dftracer" for its process events); compared case-insensitively, like the
// categories above.
struct LayerAlias {
  const char* category;
  Layer layer;
};
inline constexpr LayerAlias kLayerAliases[] = {{"sys", Layer::POSIX}, {"dftracer", Layer::PROC}};

enum class Fn : uint32_t {
  kNone = 0,
#define STRATA_FN_ENUM(id, name, layer, fields, op, pos) id,
  STRATA_FUNCTIONS(STRATA_FN_ENUM)
#undef STRATA_FN_ENUM
  kCount
};

struct FnInfo {
  const char* name;
  Layer layer;
  uint32_t fields;
  counters::Op op;  // kNone: no Darshan counter
  bool positional;  // offset column is the access offset (pread/pwrite family)
  bool data;        // a read or a write (else metadata)
};

inline constexpr FnInfo kFnInfo[] = {
    {"", Layer::POSIX, 0, counters::Op::kNone, false, false},
#define STRATA_FN_INFO(id, name, layer, fields, op, pos)                          \
  {name, Layer::layer, fields, counters::Op::k##op, pos != 0,                     \
   counters::Op::k##op == counters::Op::kRead || counters::Op::k##op == counters::Op::kWrite},
    STRATA_FUNCTIONS(STRATA_FN_INFO)
#undef STRATA_FN_INFO
};
inline constexpr uint32_t kNumFns = static_cast<uint32_t>(Fn::kCount);

// Other names of the functions above, as other tracers (DFTracer) or glibc
// entry points name them. Decorations that strip generically (__x_chk,
// __x_2, x_unlocked) are handled by the analyzer and need no row.
struct FnAlias {
  const char* name;
  Fn fn;
};
inline constexpr FnAlias kFnAliases[] = {
    {"mkstemp", Fn::open},         {"mkostemp", Fn::open},        {"mkstemps", Fn::open},
    {"mkostemps", Fn::open},       {"preadv64v2", Fn::preadv2},   {"pwritev64v2", Fn::pwritev2},
    {"llseek", Fn::lseek},         {"newfstatat", Fn::fstatat},   {"xstat", Fn::stat},
    {"xstat64", Fn::stat64},       {"lxstat", Fn::lstat},         {"lxstat64", Fn::lstat64},
    {"fxstat", Fn::fstat},         {"fxstat64", Fn::fstat64},     {"fxstatat", Fn::fstatat},
    {"fxstatat64", Fn::fstatat64}, {"__xstat", Fn::stat},       {"__xstat64", Fn::stat64},
    {"__lxstat", Fn::lstat},       {"__lxstat64", Fn::lstat64},   {"__fxstat", Fn::fstat},
    {"__fxstat64", Fn::fstat64},   {"__fxstatat", Fn::fstatat},   {"__fxstatat64", Fn::fstatat64},
    {"_IO_getc", Fn::getc},        {"_IO_putc", Fn::putc},
    {"__isoc99_fscanf", Fn::fscanf}, {"__isoc99_vfscanf", Fn::vfscanf}, {"clone", Fn::fork},
};

inline constexpr const char* layer_name(Layer l) { return kLayerInfo[static_cast<uint32_t>(l)].category; }

}  // namespace strata::runtime
