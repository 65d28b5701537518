// The functions the runtime records, with their layer and which event columns
// they fill. Name ids in a trace file are these enum values (1-based); the
// runtime writes them as DICT name entries at the start of every file.
#pragma once

#include <cstdint>

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
inline constexpr uint32_t kProcPath = f::kFieldPath | f::kFieldRet | f::kFieldErrno;

// X(identifier, "recorded name", layer, fields)
#define STRATA_FUNCTIONS(X)                           \
  X(open, "open", POSIX, kFdOp)                       \
  X(open64, "open64", POSIX, kFdOp)                   \
  X(openat, "openat", POSIX, kFdOp)                   \
  X(openat64, "openat64", POSIX, kFdOp)               \
  X(creat, "creat", POSIX, kFdOp)                     \
  X(creat64, "creat64", POSIX, kFdOp)                 \
  X(close, "close", POSIX, kFdOp)                     \
  X(read, "read", POSIX, kIo)                         \
  X(write, "write", POSIX, kIo)                       \
  X(pread, "pread", POSIX, kIo)                       \
  X(pread64, "pread64", POSIX, kIo)                   \
  X(pwrite, "pwrite", POSIX, kIo)                     \
  X(pwrite64, "pwrite64", POSIX, kIo)                 \
  X(readv, "readv", POSIX, kIo)                       \
  X(writev, "writev", POSIX, kIo)                     \
  X(preadv, "preadv", POSIX, kIo)                     \
  X(preadv64, "preadv64", POSIX, kIo)                 \
  X(pwritev, "pwritev", POSIX, kIo)                   \
  X(pwritev64, "pwritev64", POSIX, kIo)               \
  X(preadv2, "preadv2", POSIX, kIo)                   \
  X(pwritev2, "pwritev2", POSIX, kIo)                 \
  X(lseek, "lseek", POSIX, kSeek)                     \
  X(lseek64, "lseek64", POSIX, kSeek)                 \
  X(fsync, "fsync", POSIX, kFdOp)                     \
  X(fdatasync, "fdatasync", POSIX, kFdOp)             \
  X(sync_file_range, "sync_file_range", POSIX, kIo)   \
  X(ftruncate, "ftruncate", POSIX, kSized)            \
  X(ftruncate64, "ftruncate64", POSIX, kSized)        \
  X(fallocate, "fallocate", POSIX, kIo)               \
  X(fallocate64, "fallocate64", POSIX, kIo)           \
  X(posix_fallocate, "posix_fallocate", POSIX, kIo)   \
  X(posix_fallocate64, "posix_fallocate64", POSIX, kIo) \
  X(stat, "stat", POSIX, kPathOp)                     \
  X(stat64, "stat64", POSIX, kPathOp)                 \
  X(lstat, "lstat", POSIX, kPathOp)                   \
  X(lstat64, "lstat64", POSIX, kPathOp)               \
  X(fstat, "fstat", POSIX, kFdOp)                     \
  X(fstat64, "fstat64", POSIX, kFdOp)                 \
  X(fstatat, "fstatat", POSIX, kAtOp)               \
  X(fstatat64, "fstatat64", POSIX, kAtOp)           \
  X(statx, "statx", POSIX, kAtOp)                   \
  X(access, "access", POSIX, kPathOp)                 \
  X(faccessat, "faccessat", POSIX, kPathOp)           \
  X(mkdir, "mkdir", POSIX, kPathOp)                   \
  X(mkdirat, "mkdirat", POSIX, kPathOp)               \
  X(rmdir, "rmdir", POSIX, kPathOp)                   \
  X(unlink, "unlink", POSIX, kPathOp)                 \
  X(unlinkat, "unlinkat", POSIX, kPathOp)             \
  X(rename, "rename", POSIX, kPathOp)                 \
  X(renameat, "renameat", POSIX, kPathOp)             \
  X(renameat2, "renameat2", POSIX, kPathOp)           \
  X(opendir, "opendir", POSIX, kFdOp)                 \
  X(fdopendir, "fdopendir", POSIX, kFdOp)             \
  X(readdir, "readdir", POSIX, kFdOp)                 \
  X(readdir64, "readdir64", POSIX, kFdOp)             \
  X(closedir, "closedir", POSIX, kFdOp)               \
  X(mmap, "mmap", POSIX, kIo)                         \
  X(mmap64, "mmap64", POSIX, kIo)                     \
  X(munmap, "munmap", POSIX, kMapping)                  \
  X(msync, "msync", POSIX, kMapping)                    \
  X(dup, "dup", POSIX, kFdOp)                         \
  X(dup2, "dup2", POSIX, kFdOp)                       \
  X(dup3, "dup3", POSIX, kFdOp)                       \
  X(fcntl, "fcntl", POSIX, kFdOp)                     \
  X(sendfile, "sendfile", POSIX, kIo)                 \
  X(sendfile64, "sendfile64", POSIX, kIo)             \
  X(copy_file_range, "copy_file_range", POSIX, kIo)   \
  X(fopen, "fopen", STDIO, kFdOp)                     \
  X(fopen64, "fopen64", STDIO, kFdOp)                 \
  X(fdopen, "fdopen", STDIO, kFdOp)                   \
  X(freopen, "freopen", STDIO, kFdOp)                 \
  X(freopen64, "freopen64", STDIO, kFdOp)             \
  X(fclose, "fclose", STDIO, kFdOp)                   \
  X(fread, "fread", STDIO, kIo)                       \
  X(fwrite, "fwrite", STDIO, kIo)                     \
  X(fgets, "fgets", STDIO, kIo)                       \
  X(fputs, "fputs", STDIO, kIo)                       \
  X(getline, "getline", STDIO, kStreamIo)                   \
  X(getdelim, "getdelim", STDIO, kStreamIo)                 \
  X(fseek, "fseek", STDIO, kSeek)                     \
  X(fseeko, "fseeko", STDIO, kSeek)                   \
  X(fseeko64, "fseeko64", STDIO, kSeek)               \
  X(ftell, "ftell", STDIO, kSeek)                     \
  X(ftello, "ftello", STDIO, kSeek)                   \
  X(ftello64, "ftello64", STDIO, kSeek)               \
  X(rewind, "rewind", STDIO, kSeek)                   \
  X(fflush, "fflush", STDIO, kFdOp)                   \
  X(fprintf, "fprintf", STDIO, kStreamIo)                   \
  X(vfprintf, "vfprintf", STDIO, kStreamIo)                 \
  X(printf, "printf", STDIO, kStreamIo)                     \
  X(vprintf, "vprintf", STDIO, kStreamIo)                   \
  X(fputc, "fputc", STDIO, kIo)                       \
  X(putc, "putc", STDIO, kIo)                         \
  X(putchar, "putchar", STDIO, kIo)                   \
  X(puts, "puts", STDIO, kIo)                         \
  X(putw, "putw", STDIO, kIo)                         \
  X(fgetc, "fgetc", STDIO, kIo)                       \
  X(getc, "getc", STDIO, kIo)                         \
  X(getchar, "getchar", STDIO, kIo)                   \
  X(getw, "getw", STDIO, kIo)                         \
  X(fscanf, "fscanf", STDIO, kStreamIo)                     \
  X(vfscanf, "vfscanf", STDIO, kStreamIo)                   \
  X(ungetc, "ungetc", STDIO, kSeek)                   \
  X(fsetpos, "fsetpos", STDIO, kSeek)                 \
  X(fsetpos64, "fsetpos64", STDIO, kSeek)             \
  X(fork, "fork", PROC, kProc)                        \
  X(vfork, "vfork", PROC, kProc)                      \
  X(posix_spawn, "posix_spawn", PROC, kProcPath)      \
  X(posix_spawnp, "posix_spawnp", PROC, kProcPath)    \
  X(execve, "execve", PROC, kProcPath)                \
  X(execv, "execv", PROC, kProcPath)                  \
  X(execvp, "execvp", PROC, kProcPath)                \
  X(execvpe, "execvpe", PROC, kProcPath)              \
  X(execl, "execl", PROC, kProcPath)                  \
  X(execlp, "execlp", PROC, kProcPath)                \
  X(execle, "execle", PROC, kProcPath)                \
  X(fexecve, "fexecve", PROC, kProcPath)              \
  X(exit, "exit", PROC, kProc)                        \
  X(_exit, "_exit", PROC, kProc)                      \
  X(_Exit, "_Exit", PROC, kProc)                      \
  X(signal_flush, "signal", PROC, kProc)

enum class Layer : uint8_t { POSIX, STDIO, PROC };

enum class Fn : uint32_t {
  kNone = 0,
#define STRATA_FN_ENUM(id, name, layer, fields) id,
  STRATA_FUNCTIONS(STRATA_FN_ENUM)
#undef STRATA_FN_ENUM
  kCount
};

struct FnInfo {
  const char* name;
  Layer layer;
  uint32_t fields;
};

inline constexpr FnInfo kFnInfo[] = {
    {"", Layer::POSIX, 0},
#define STRATA_FN_INFO(id, name, layer, fields) {name, Layer::layer, fields},
    STRATA_FUNCTIONS(STRATA_FN_INFO)
#undef STRATA_FN_INFO
};
inline constexpr uint32_t kNumFns = static_cast<uint32_t>(Fn::kCount);

inline const char* layer_name(Layer l) {
  switch (l) {
    case Layer::POSIX: return f::kCatPosix;
    case Layer::STDIO: return f::kCatStdio;
    default: return f::kCatProcess;
  }
}

}  // namespace strata::runtime
