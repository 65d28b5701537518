#include "analysis/model.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace strata::analysis {

const char* layer_name(Layer l) {
  switch (l) {
    case Layer::kPosix: return "POSIX";
    case Layer::kStdio: return "STDIO";
    case Layer::kProc: return "PROC";
    case Layer::kApp: return "APP";
  }
  return "?";
}

namespace {

using counters::Op;

bool in(std::string_view n, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

bool starts(std::string_view n, std::string_view p) { return n.substr(0, p.size()) == p; }

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

// Strips glibc's fortify / 64-bit / unlocked decorations: __read_chk -> read,
// __pread64_chk -> pread64, fread_unlocked -> fread, __open_2 -> open.
std::string_view base_name(std::string_view n) {
  if (starts(n, "__") && n.size() > 6 && n.substr(n.size() - 4) == "_chk") n = n.substr(2, n.size() - 6);
  if (starts(n, "__") && n.size() > 4 && n.substr(n.size() - 2) == "_2") n = n.substr(2, n.size() - 4);
  if (n.size() > 9 && n.substr(n.size() - 9) == "_unlocked") n = n.substr(0, n.size() - 9);
  return n;
}

}  // namespace

FuncInfo classify(std::string_view raw_name, std::string_view category) {
  FuncInfo f;
  f.name = std::string(raw_name);
  f.category = std::string(category);
  const std::string cat = lower(category);
  const std::string_view n = base_name(raw_name);
  if (cat == "posix" || cat == "sys") {
    f.layer = Layer::kPosix;
  } else if (cat == "stdio") {
    f.layer = Layer::kStdio;
  } else if (cat == "proc" || cat == "dftracer") {
    f.layer = Layer::kProc;
  } else {
    f.layer = Layer::kApp;
    const std::string ln = lower(raw_name);
    f.is_compute = cat.find("compute") != std::string::npos || ln.find("compute") != std::string::npos;
    // strata's Python layer (python/strata/_auto.py) records one
    // "dataloader.next" per batch the training loop asked the DataLoader for.
    constexpr std::string_view kNext = "dataloader.next";
    f.is_loader_wait = ln.size() >= kNext.size() && ln.compare(ln.size() - kNext.size(), kNext.size(), kNext) == 0;
    return f;
  }
  if (f.layer == Layer::kProc) {
    f.is_fork = in(n, {"fork", "vfork", "clone"});
    return f;
  }
  if (f.layer == Layer::kPosix) {
    if (in(n, {"fork", "vfork", "clone"})) {
      f.layer = Layer::kProc;  // DFTracer files fork under POSIX
      f.is_fork = true;
      return f;
    }
    if (in(n, {"open", "open64", "openat", "openat64", "creat", "creat64", "mkstemp", "mkostemp",
               "mkstemps", "mkostemps"}))
      f.op = Op::kOpen;
    else if (in(n, {"dup", "dup2", "dup3"}))
      f.op = Op::kDup;
    else if (n == "fileno")
      f.op = Op::kFileno;
    else if (n == "close")
      f.op = Op::kClose;
    else if (in(n, {"read", "readv", "pread", "pread64", "preadv", "preadv64", "preadv2", "preadv64v2"}))
      f.op = Op::kRead;
    else if (in(n, {"write", "writev", "pwrite", "pwrite64", "pwritev", "pwritev64", "pwritev2",
                    "pwritev64v2"}))
      f.op = Op::kWrite;
    else if (in(n, {"lseek", "lseek64", "llseek"}))
      f.op = Op::kSeek;
    else if (in(n, {"stat", "stat64", "lstat", "lstat64", "fstat", "fstat64", "fstatat", "fstatat64",
                    "newfstatat", "statx", "xstat", "xstat64", "lxstat", "lxstat64", "fxstat",
                    "fxstat64", "fxstatat", "fxstatat64"}))
      f.op = Op::kStat;
    else if (n == "fsync")
      f.op = Op::kFsync;
    else if (n == "fdatasync")
      f.op = Op::kFdatasync;
    else if (in(n, {"mmap", "mmap64"}))
      f.op = Op::kMmap;
    else if (in(n, {"rename", "renameat", "renameat2"}))
      f.op = Op::kRenameSrc;
    f.positional = starts(n, "pread") || starts(n, "pwrite");
  } else {  // STDIO
    if (in(n, {"fopen", "fopen64", "freopen", "freopen64"}))
      f.op = Op::kOpen;
    else if (n == "fdopen")
      f.op = Op::kFdopen;
    else if (n == "fclose")
      f.op = Op::kClose;
    else if (in(n, {"fread", "fgets", "fgetc", "getc", "_IO_getc", "getchar", "getw", "fscanf",
                    "__isoc99_fscanf", "vfscanf", "__isoc99_vfscanf", "getline", "getdelim"}))
      f.op = Op::kRead;
    else if (in(n, {"fwrite", "fputs", "fputc", "putc", "_IO_putc", "putchar", "puts", "putw", "fprintf",
                    "vfprintf", "printf", "vprintf"}))
      f.op = Op::kWrite;
    else if (in(n, {"fseek", "fseeko", "fseeko64", "fsetpos", "fsetpos64", "rewind"}))
      f.op = Op::kSeek;
    else if (n == "fflush")
      f.op = Op::kFlush;
  }
  f.is_read = f.op == Op::kRead;
  f.is_write = f.op == Op::kWrite;
  f.data = f.is_read || f.is_write;
  return f;
}

}  // namespace strata::analysis
