#include "analysis/analyze.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <unordered_map>
#include <unordered_set>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "analysis/open_source.h"
#include "analysis/pass.h"

namespace strata::analysis {

namespace fs = std::filesystem;
using namespace std::string_view_literals;

int64_t parse_size(const std::string& s) {
  if (s.empty()) return -1;
  size_t i = 0;
  double v = 0;
  try {
    v = std::stod(s, &i);
  } catch (...) {
    return -1;
  }
  std::string u = s.substr(i);
  for (char& ch : u) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  double m = 1;
  if (u.empty() || u == "b") m = 1;
  else if (u == "k" || u == "kib" || u == "ki") m = 1024.0;
  else if (u == "m" || u == "mib" || u == "mi") m = 1024.0 * 1024;
  else if (u == "g" || u == "gib" || u == "gi") m = 1024.0 * 1024 * 1024;
  else if (u == "t" || u == "tib" || u == "ti") m = 1024.0 * 1024 * 1024 * 1024;
  else if (u == "kb") m = 1e3;
  else if (u == "mb") m = 1e6;
  else if (u == "gb") m = 1e9;
  else if (u == "tb") m = 1e12;
  else return -1;
  if (v < 0) return -1;
  return static_cast<int64_t>(v * m);
}

const char* role_name(Role r) {
  switch (r) {
    case Role::kTrainData: return "dataset(train)";
    case Role::kValData: return "dataset(validation)";
    case Role::kData: return "dataset";
    case Role::kCheckpoint: return "checkpoint";
    case Role::kOutput: return "output";
    case Role::kConfig: return "config";
    case Role::kLibrary: return "library";
    case Role::kLog: return "log";
    case Role::kOther: return "other";
  }
  return "other";
}

static std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// s contains `part`: memchr to each place of its first
// byte, its second compared before the rest. std::string::find and glibc's
// memmem cost several times more on paths.
static bool contains(std::string_view s, std::string_view part) {
  if (part.size() < 2) return s.find(part) != std::string_view::npos;
  if (s.size() < part.size()) return false;
  const char* p = s.data();
  const char* const last = s.data() + (s.size() - part.size());  // the last place it can start
  while (p <= last) {
    p = static_cast<const char*>(std::memchr(p, part[0], static_cast<size_t>(last - p) + 1));
    if (!p) return false;
    if (p[1] == part[1] && std::memcmp(p + 2, part.data() + 2, part.size() - 2) == 0) return true;
    ++p;
  }
  return false;
}

// std::tolower of each byte of s into out (s.size() bytes) in the "C" locale
// (strata never sets one), 8 bytes at a time.
static void to_lower_ascii(std::string_view s, char* out) {
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    constexpr uint64_t k7f = 0x7f7f7f7f7f7f7f7full, k80 = 0x8080808080808080ull, k01 = 0x0101010101010101ull;
    const uint64_t low7 = x & k7f;
    const uint64_t ge_a = low7 + (0x80 - 'A') * k01;      // bit 7 set where the low 7 bits >= 'A'
    const uint64_t gt_z = low7 + (0x7f - 'Z') * k01;      // bit 7 set where they are > 'Z'
    const uint64_t upper = (ge_a ^ gt_z) & ~x & k80;      // 'A'..'Z', not a byte >= 0x80
    x |= upper >> 2;                                      // + 0x20
    std::memcpy(out + i, &x, 8);
  }
  for (; i < s.size(); ++i) {
    const char c = s[i];
    out[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
}

// The first 4 characters of x printed with "%f" ("3.00" of 3.0, "12.5"):
// std::to_string's text without its vsnprintf, a few hundred instructions
// per file of a large data set.
static std::string first_digits(double x) {
  char buf[400];
  if (x >= 0 && x < 1e9) {  // the micro-units as an integer: no decimal conversion of the double
    const auto micro = static_cast<uint64_t>(std::llround(x * 1e6));
    char* e = std::to_chars(buf, buf + 16, micro / 1000000).ptr;
    *e++ = '.';
    const uint64_t frac = micro % 1000000;
    for (uint64_t d = 100000; d > 0; d /= 10) *e++ = static_cast<char>('0' + frac / d % 10);
    return std::string(buf, 4);
  }
  const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, 6);
  return std::string(buf, std::min<size_t>(4, static_cast<size_t>(r.ptr - buf)));
}

// s starts with the literal `lit`: its length a constant, the compare is a
// few instructions inline (string_view::starts_with calls memcmp).
template <size_t N>
static bool starts_with_lit(std::string_view s, const char (&lit)[N]) {
  return s.size() >= N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
}

template <size_t N>
static bool ends_with_lit(std::string_view s, const char (&lit)[N]) {
  return s.size() >= N - 1 && std::memcmp(s.data() + s.size() - (N - 1), lit, N - 1) == 0;
}

// The file name `p` (lower-cased) ends with one of `exts`.
static bool ends_with_any(std::string_view p, std::initializer_list<std::string_view> exts) {
  for (std::string_view e : exts)
    if (p.size() >= e.size() && p.substr(p.size() - e.size()) == e) return true;
  return false;
}

// p ends with one of `exts` (each ".x"; a two-part one like ".csv.log" only
// where the list also holds its last part): p's extension, from its last '.'
// after the last '/', is one of them.
static bool has_ext(std::string_view ext, std::initializer_list<std::string_view> exts) {
  if (ext.empty()) return false;
  for (std::string_view e : exts)
    if (ext == e) return true;
  return false;
}

// An app function of a DataLoader (strata's Python layer: "dataloader.next"
// ..., category "dataloader"): its presence makes the deep-learning summary.
static bool loader_function(const FuncStats& f) {
  return f.layer == Layer::kApp &&
         (lower(f.category).find("dataloader") != std::string::npos || lower(f.name).rfind("dataloader.", 0) == 0);
}

// A training job: epoch tags, DataLoader or checkpoint app events
// (torch.save / torch.load: a model's files are checkpoints even in a loop
// without a DataLoader).
static bool is_training(const Job& job) {
  if (!job.by_epoch.empty() || !job.by_epoch_outside.empty()) return true;
  for (const auto& [key, f] : job.funcs)
    if (loader_function(f) || (f.layer == Layer::kApp && lower(f.category) == "checkpoint")) return true;
  return false;
}

// Worked out once when the job is finished (index_file_verdicts).
static bool training_job(const Job& job) {
  return job.data_files.training ? *job.data_files.training : is_training(job);
}

// The MPI rank of a process of the job (any of its images'), -1 if none.
static int64_t rank_of(const Job& job, int64_t pid) {
  if (job.data_files.known) {
    const auto& v = job.data_files.rank_of_pid;
    auto it = std::lower_bound(v.begin(), v.end(), std::pair<int64_t, int64_t>{pid, INT64_MIN});
    return it != v.end() && it->first == pid ? it->second : -1;
  }
  for (const ProcResult& p : job.procs)
    if (p.meta.pid == pid && p.meta.rank >= 0) return p.meta.rank;
  return -1;
}

// Distinct pids among a file's processes that pass `keep`; a file is
// touched by a handful of processes, so a scan of the few seen beats a set.
template <class Keep>
static size_t distinct_pids(const FileProcRange& procs, Keep keep) {
  constexpr size_t kFew = 16;
  int64_t few[kFew];
  std::vector<int64_t> more;
  size_t n = 0;
  for (const FileProcRef fp : procs) {
    if (!keep(fp)) continue;
    if (std::find(few, few + std::min(n, kFew), fp.pid) != few + std::min(n, kFew) ||
        std::find(more.begin(), more.end(), fp.pid) != more.end())
      continue;
    if (n < kFew)
      few[n] = fp.pid;
    else
      more.push_back(fp.pid);
    ++n;
  }
  return n;
}

// Why a read file is taken for a data set.
template <class Ev>
static void dataset_evidence(const FileAgg& f, const Job& job, const FileVerdict& v, bool training, bool data_ext,
                             bool val_name, Ev& ev) {
  if (data_ext) ev("data-set file name");
  if (v.reread > 1.5) ev("re-read " + first_digits(v.reread) + (training ? "x (epochs)" : "x"));
  if (f.reads >= 16) ev(std::to_string(f.reads) + " reads");
  if (v.nprocs > 1) {
    // nprocs counts writers too; the evidence names who read it.
    const size_t readers = distinct_pids(f.procs(), [](const FileProcRef& fp) { return fp.pf.reads > 0; });
    ev(readers == v.nprocs ? "read by " + std::to_string(v.nprocs) + " processes"
                           : "used by " + std::to_string(v.nprocs) + " processes (" + std::to_string(readers) +
                                 " read it)");
  }
  if (training && val_name) ev("validation-like name");
  if (!job.sizes_known) ev("sizes unknown: decided from counts and names only");
}

// The name tests are lambdas, evaluated only where a rule reaches them: most
// files of a large job (metadata only) are decided by the first two.
// Fills v, reusing its strings' storage (json_files classifies every file of
// the job into one FileVerdict).
// Evidence strings are built only when asked for (index_file_verdicts asks for
// none, for every data file).
static void classify(const FileAgg& f, const Job& job, bool evidence, FileVerdict& v) {
  v.role = Role::kOther;
  v.nprocs = 0;
  v.shared = false;
  v.reread = -1;
  v.per_open = -1;
  v.metadata_bound = false;
  size_t nev = 0;  // evidence items so far (v.evidence is cut to it at the end)
  // Processes that share the file: those that read or wrote it (a launcher
  // that only stat()s or opens it does not share its data; the text report's
  // "I/O strategy" counts the same way), and MPI ranks that opened it while
  // no process of their rank moved its bytes: collective MPI-IO opens the
  // file on every rank and moves all ranks' data through a few aggregator
  // ranks (two-phase I/O). A forked worker inherits its parent's rank, so a
  // DataLoader's main process that only opens what its workers read still
  // does not count. Metadata-only files: every process.
  const bool any_data = f.reads + f.writes > 0;
  const FileProcRange procs = f.procs();
  auto moved = [](const FileProcRef& fp) { return fp.pf.reads + fp.pf.writes > 0; };
  if (procs.size() == 1) {  // most files: no list of pids to build
    v.nprocs = !any_data || moved(procs[0]) ? 1 : 0;
  } else {
    std::vector<int64_t> mover_ranks;  // sorted; built for the first opener with a rank
    bool movers_known = false;
    v.nprocs = distinct_pids(procs, [&](const FileProcRef& fp) {
      if (!any_data || moved(fp)) return true;
      if (fp.pf.opens <= fp.pf.fdopens) return false;
      const int64_t rank = rank_of(job, fp.pid);
      if (rank < 0) return false;
      if (!movers_known) {
        for (const FileProcRef o : procs)
          if (moved(o)) mover_ranks.push_back(rank_of(job, o.pid));
        std::sort(mover_ranks.begin(), mover_ranks.end());
        movers_known = true;
      }
      return !std::binary_search(mover_ranks.begin(), mover_ranks.end(), rank);
    });
  }
  v.shared = v.nprocs > 1;
  const bool rd = f.reads > 0, wr = f.writes > 0;
  v.access = rd && wr ? "read-write" : rd ? "read-only" : wr ? "write-only" : "metadata-only";
  if (job.sizes_known && f.extent > 0 && f.bytes_read > 0)
    v.reread = static_cast<double>(f.bytes_read) / static_cast<double>(f.extent);
  // fdopen of a descriptor already open (numpy.fromfile) is not another pass over the file.
  if (v.reread >= 0 && f.opens > f.fdopens) v.per_open = v.reread / static_cast<double>(f.opens - f.fdopens);
  // whole vs partial per reading process
  int whole = 0, partial = 0;
  for (const FileProcRef fp : f.procs()) {
    if (fp.pf.reads == 0 || !fp.pf.offsets_known() || f.extent <= 0) continue;
    double cov = static_cast<double>(fp.pf.coverage()) / static_cast<double>(f.extent);
    (cov >= 0.99 ? whole : partial)++;
  }
  v.read_extent = whole + partial == 0 ? "unknown" : whole >= partial ? "whole" : "partial";
  if (f.counted_reads() > 1 && job.sizes_known) {
    // Darshan's SEQ reads start past the previous read's start, CONSEC ones
    // exactly at its end: forward with gaps between (each rank reading its
    // records of a shared file, every k-th sample) is strided, not sequential.
    const double pairs = static_cast<double>(f.counted_reads() - 1);
    const double seq = static_cast<double>(f.seq_reads()) / pairs;
    const double consec = static_cast<double>(f.consec_reads()) / pairs;
    v.pattern = seq >= 0.8 ? (consec >= 0.5 ? "sequential" : "strided") : seq <= 0.2 ? "random" : "mixed";
  } else {
    v.pattern = "unknown";
  }
  v.metadata_bound = f.meta_ns > f.read_ns + f.write_ns;

  // Lower-cased into a buffer kept across calls: classify runs several times
  // per file of the job.
  thread_local std::string p;
  p.resize(f.path.size());
  to_lower_ascii(f.path, p.data());
  const std::string_view sp(p);
  auto ev = [&](std::string_view s) {
    if (!evidence) return;
    if (nev < v.evidence.size()) {
      v.evidence[nev].assign(s);
    } else {
      v.evidence.emplace_back(s);
    }
    ++nev;
  };
  auto done = [&] { v.evidence.resize(nev); };
  int64_t max_read_size = 0;
  size_t write_epochs = 0;
  for (const FileProcRef fp : f.procs()) {
    max_read_size = std::max(max_read_size, fp.pf.max_read());
    write_epochs = std::max(write_epochs, fp.pf.write_epochs());
  }
  auto lib_path = [&] {
    return starts_with_lit(sp, "/usr/lib") || starts_with_lit(sp, "/lib/") || starts_with_lit(sp, "/lib64/") ||
           starts_with_lit(sp, "/usr/share") ||
           (contains(p, "-packages/") && (contains(p, "/site-packages/") || contains(p, "/dist-packages/")));
  };
  std::string_view ext;  // from the last '.' of the file name, "" if none
  for (size_t i = sp.size(); i-- > 0;) {
    if (sp[i] == '/') break;
    if (sp[i] == '.') {
      ext = sp.substr(i);
      break;
    }
  }
  auto lib_ext = [&] { return has_ext(ext, {".so", ".py", ".pyc", ".pyi", ".pth"}) || contains(p, ".so."); };
  auto ckpt_name = [&] { return contains(p, "ckpt") || contains(p, "checkpoint") ||
                         has_ext(ext, {".pt", ".pth", ".ckpt", ".safetensors", ".h5.ckpt", ".keras"}); };
  auto cfg_ext = [&] { return has_ext(ext, {".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".conf"}) ||
                       starts_with_lit(sp, "/etc/"); };
  auto log_ext = [&] { return has_ext(ext, {".log", ".out", ".err", ".csv.log"}) || contains(p, "/log") ||
                       starts_with_lit(sp, "/dev/pts") || starts_with_lit(sp, "/dev/tty"); };
  auto data_ext = [&] { return has_ext(ext, {".npz", ".npy", ".tfrecord", ".tfrecords", ".h5", ".hdf5", ".jpg", ".jpeg",
                                    ".png", ".bin", ".dat", ".csv", ".parquet", ".arrow", ".lmdb", ".mdb", ".rec",
                                    ".pkl", ".tar", ".txt", ".raw", ".idx", ".zarr"}); };
  // "val" covers "valid" and "eval".
  auto val_name = [&] { return contains(p, "val") || contains(p, "test"); };

  if (lib_ext() || (!wr && lib_path())) {
    v.role = Role::kLibrary;
    if (evidence && lib_ext()) ev("code/library file name (" + std::string(f.path.substr(f.path.find_last_of('.') + 1)) + ")");
    if (evidence && lib_path()) ev("under a system or package directory");
    if (evidence && f.mmaps) ev(std::to_string(f.mmaps) + " mmap(s): loaded, not read");
    return done();
  }
  if (wr && !rd && log_ext()) {
    v.role = Role::kLog;
    ev("write-only, log-like name");
    return done();
  }
  const bool training = training_job(job);
  if (wr && !training && !ckpt_name() && f.bytes_written >= (1 << 20) && !log_ext() && !rd) {
    v.role = Role::kOutput;
    if (evidence) ev("large writes (" + std::to_string(f.bytes_written) + " B), write-only");
    return done();
  }
  if (wr && (ckpt_name() || write_epochs >= 2 || (f.bytes_written >= (1 << 20) && !log_ext() && !rd))) {
    v.role = Role::kCheckpoint;
    if (evidence) {
      if (ckpt_name()) ev("checkpoint-like name");
      if (write_epochs >= 2) ev("written in " + std::to_string(write_epochs) + " epochs");
      if (f.bytes_written >= (1 << 20)) ev("large writes (" + std::to_string(f.bytes_written) + " B)");
      if (rd) ev("also read back (restore)");
    }
    return done();
  }
  if (wr && !rd) {
    v.role = log_ext() || f.writes > 0 ? Role::kLog : Role::kOther;
    ev("write-only, small appends");
    return done();
  }
  if (rd && cfg_ext() && f.extent < (1 << 20)) {
    v.role = Role::kConfig;
    ev("configuration file name");
    if (evidence) ev("small (" + std::to_string(f.extent) + " B) and read-only");
    return done();
  }
  if (rd) {
    bool dataset = data_ext() || v.reread > 1.5 || f.extent >= (1 << 20) || f.reads >= 16 || v.nprocs > 1;
    if (dataset) {
      v.role = !training ? Role::kData : val_name() ? Role::kValData : Role::kTrainData;
      if (evidence) dataset_evidence(f, job, v, training, data_ext(), val_name(), ev);
      return done();
    }
    if (cfg_ext()) {
      v.role = Role::kConfig;
      ev("configuration file name");
      return done();
    }
  }
  v.role = Role::kOther;
  if (!rd && !wr) ev("metadata only (stat/open without data)");
  return done();
}

FileVerdict classify_file(const FileAgg& f, const Job& job) {
  FileVerdict v;
  classify(f, job, true, v);
  return v;
}

namespace {

const FileVerdict* indexed_verdict(const FileAgg& f, const Job& job) {
  if (!job.data_files.known) return nullptr;
  auto it = job.data_files.verdicts.find(&f);
  return it == job.data_files.verdicts.end() ? nullptr : &it->second;
}

}  // namespace

void classify_file(const FileAgg& f, const Job& job, FileVerdict& v, bool with_evidence) {
  if (!with_evidence)
    if (const FileVerdict* known = indexed_verdict(f, job)) {
      v = *known;
      return;
    }
  classify(f, job, with_evidence, v);
}

Role file_role(const FileAgg& f, const Job& job) {
  if (const FileVerdict* known = indexed_verdict(f, job)) return known->role;
  FileVerdict v;
  classify(f, job, false, v);
  return v.role;
}

void index_file_verdicts(Job& job) {
  job.data_files.training = is_training(job);
  auto& verdicts = job.data_files.verdicts;
  verdicts.clear();
  verdicts.reserve(job.data_files.files.size());
  for (const FileAgg* f : job.data_files.files) classify(*f, job, false, verdicts[f]);
}

namespace {

// parent_dir as a view into `path`: the walks below climb every data file's
// directories, and a string per step was most of their time.
std::string_view parent_of(std::string_view p) {
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);  // a directory's parent
  const size_t k = p.find_last_of('/');
  return k == std::string_view::npos ? std::string_view() : p.substr(0, k + 1);
}

}  // namespace

std::string parent_dir(std::string_view path) { return std::string(parent_of(path)); }

std::vector<std::string> rollup_dirs(std::span<const PathKey> items, std::span<const PathKey> universe) {
  // Per directory: the one key of every universe file below it, or mixed.
  struct Purity {
    std::string_view key;  // the first key seen below
    bool mixed = false;
  };
  std::unordered_map<std::string_view, Purity> purity;
  for (const auto& [path, key] : universe)
    for (std::string_view d = parent_of(path); !d.empty(); d = d == "/" ? std::string_view() : parent_of(d)) {
      auto [it, fresh] = purity.try_emplace(d, Purity{key, false});
      // A directory whose first key is this one: every directory above it
      // has this key already, first or as a mix (by induction: the file
      // that brought it climbed on, or stopped at such a directory).
      if (!fresh && it->second.key == key) break;
      if (!fresh) it->second.mixed = true;
    }
  auto pure = [&](std::string_view d, std::string_view key) {
    auto it = purity.find(d);
    return it == purity.end() || (!it->second.mixed && it->second.key == key);
  };
  // Climb from each item's directory while the parent (never "/") holds only
  // files of the item's key.
  std::map<std::pair<std::string_view, std::string_view>, std::vector<size_t>> groups;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string_view d = parent_of(items[i].first);
    while (!d.empty() && d != "/") {
      const std::string_view up = parent_of(d);
      if (up.empty() || up == "/" || !pure(up, items[i].second)) break;
      d = up;
    }
    groups[{d, items[i].second}].push_back(i);
  }
  std::vector<std::string> out(items.size());
  for (auto& [key, idx] : groups) {
    if (idx.size() < kDirGroupMin || key.first.empty()) continue;
    // Shown as the deepest directory holding all of them.
    std::string_view lca = parent_of(items[idx[0]].first);
    for (size_t i : idx) {
      const std::string_view d = parent_of(items[i].first);
      size_t n = 0;
      while (n < lca.size() && n < d.size() && lca[n] == d[n]) ++n;
      lca = lca.substr(0, n);
      lca = lca.substr(0, lca.find_last_of('/') + 1);
    }
    const std::string name(lca);
    for (size_t i : idx) out[i] = name;
  }
  return out;
}

namespace {

// Files that moved data (read or written), keyed by `keys` ("" for a file
// not in it): the universe a roll-up directory must hold nothing else of.
// Views into the job's paths and into `keys`.
std::vector<PathKey> data_files(const Job& job, const std::map<std::string, std::string, std::less<>>& keys) {
  std::vector<PathKey> u;
  for (const FileAgg& f : files_with_data(job)) {
    if (f.reads + f.writes == 0) continue;
    auto it = keys.find(f.path);
    u.emplace_back(f.path, it == keys.end() ? std::string_view() : std::string_view(it->second));
  }
  return u;
}

}  // namespace

std::vector<DatasetDir> dataset_dirs(const Job& job) {
  // The data set files (items) and every file that moved data (the
  // universe, data set files keyed by role), in one walk.
  std::vector<PathKey> items, universe;
  std::vector<std::pair<const FileAgg*, FileVerdict>> files;
  for (const FileAgg& f : files_with_data(job)) {
    if (f.reads + f.writes == 0) continue;
    std::string_view key;
    if (f.reads > 0) {  // data set roles need reads (classify_file)
      FileVerdict v;
      classify_file(f, job, v, /*with_evidence=*/false);
      if (dataset_role(v.role)) {
        key = role_name(v.role);
        items.emplace_back(f.path, key);
        files.emplace_back(&f, std::move(v));
      }
    }
    universe.emplace_back(f.path, key);
  }
  std::vector<std::string> dirs = rollup_dirs(items, universe);
  struct Acc {
    DatasetDir d;
    std::vector<int64_t> readers;
    // Distinct epochs: each (process, file) lists its own, so a data set
    // read by many processes repeats each value thousands of times.
    std::unordered_set<std::string_view> epochs;
  };
  std::map<std::pair<std::string, int>, Acc> acc;
  for (size_t i = 0; i < files.size(); ++i) {
    if (dirs[i].empty()) continue;
    const FileAgg& f = *files[i].first;
    const FileVerdict& v = files[i].second;
    Acc& a = acc[{dirs[i], static_cast<int>(v.role)}];
    DatasetDir& d = a.d;
    d.role = v.role;
    ++d.files;
    d.opens += f.opens;
    d.file_opens += f.opens - f.fdopens;
    d.reads += f.reads;
    d.stats += f.stats;
    d.bytes_read += f.bytes_read;
    d.extent += f.extent;
    d.read_ns += f.read_ns;
    d.meta_ns += f.meta_ns;
    if (v.nprocs > 1 && f.reads > 0) ++d.shared_files;
    if (v.read_extent == "whole") ++d.whole_files;
    size_t readers = 0;
    for (const FileProcRef fp : f.procs()) {
      if (fp.pf.reads == 0) continue;
      ++readers;
      a.readers.push_back(fp.pid);
      if (const FileAccess* acc = fp.pf.access.find())
        for (const std::string& e : acc->read_epochs) a.epochs.insert(e);
    }
    d.min_readers = d.files == 1 ? readers : std::min(d.min_readers, readers);
    d.max_readers = std::max(d.max_readers, readers);
  }
  std::vector<DatasetDir> out;
  for (auto& [key, a] : acc) {
    DatasetDir d = a.d;
    d.dir = key.first;
    std::sort(a.readers.begin(), a.readers.end());
    d.readers = static_cast<size_t>(std::unique(a.readers.begin(), a.readers.end()) - a.readers.begin());
    d.epochs = a.epochs.size();
    if (job.sizes_known && d.extent > 0 && d.bytes_read > 0)
      d.reread = static_cast<double>(d.bytes_read) / static_cast<double>(d.extent);
    if (d.reread >= 0 && d.file_opens > 0)
      d.per_open = d.reread * static_cast<double>(d.files) / static_cast<double>(d.file_opens);
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const DatasetDir& x, const DatasetDir& y) {
    int64_t tx = x.read_ns + x.meta_ns, ty = y.read_ns + y.meta_ns;
    return tx != ty ? tx > ty : x.dir < y.dir;
  });
  return out;
}

namespace {

// Rolls items up (rollup_dirs): one group per roll-up directory, every other
// item a group of its own, in the items' order of first appearance.
std::vector<StageAdvice::Group> group_items(std::vector<StageAdvice::Group> items, const std::vector<std::string>& dirs) {
  std::vector<StageAdvice::Group> out;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t i = 0; i < items.size(); ++i) {
    StageAdvice::Group& g = items[i];
    if (dirs[i].empty()) {
      out.push_back(g);
      continue;
    }
    auto [pos, fresh] = index.emplace(std::make_pair(dirs[i], g.reason), out.size());
    if (fresh) {
      StageAdvice::Group d;
      d.name = dirs[i];
      d.is_dir = true;
      d.reason = g.reason;
      out.push_back(d);
    }
    StageAdvice::Group& d = out[pos->second];
    d.files += g.files;
    d.size += g.size;
    d.read_ns += g.read_ns;
    d.bytes_read += g.bytes_read;
    d.saved_ns += g.saved_ns;
  }
  for (auto& g : out)
    if (g.is_dir && g.size > 0) g.reread = static_cast<double>(g.bytes_read) / static_cast<double>(g.size);
  return out;
}

}  // namespace

StageAdvice stage_advice(const Job& job, int64_t capacity, double speedup) {
  StageAdvice a;
  if (speedup <= 1) speedup = 1.0001;
  struct Cand {
    const FileAgg* f;
    double benefit_ns;
    double per_byte;
    double reread;
  };
  std::vector<Cand> cands;
  for (const FileAgg& f : files_with_data(job)) {
    if (f.reads == 0 || f.read_ns <= 0 || f.extent <= 0 || f.bytes_read <= 0) continue;
    const Role role = file_role(f, job);
    if (role == Role::kLibrary || role == Role::kLog || is_environment_file(f.path, role)) continue;
    const std::string path(f.path);
    const double reread = static_cast<double>(f.bytes_read) / static_cast<double>(f.extent);
    // Staging reads the file once at the observed speed; later reads run
    // `speedup` times faster.
    const double benefit = static_cast<double>(f.read_ns) * (1.0 - 1.0 / speedup - 1.0 / reread);
    if (reread <= 1.01) {
      a.warnings.push_back(path + ": read once (re-read " + first_digits(reread) +
                           "x): staging costs a full read and saves nothing");
      a.warning_items.push_back({path, "read once", f.extent, f.read_ns, f.bytes_read, reread});
      continue;
    }
    if (capacity >= 0 && f.extent > capacity) {
      a.warnings.push_back(path + ": " + std::to_string(f.extent) + " B does not fit the capacity");
      a.warning_items.push_back({path, "too large", f.extent, f.read_ns, f.bytes_read, reread});
      continue;
    }
    if (benefit <= 0) continue;
    cands.push_back({&f, benefit, benefit / static_cast<double>(f.extent), reread});
  }
  std::sort(cands.begin(), cands.end(), [](const Cand& x, const Cand& y) {
    if (x.per_byte != y.per_byte) return x.per_byte > y.per_byte;
    return x.f->path < y.f->path;
  });
  for (auto& c : cands) {
    if (capacity >= 0 && a.used + c.f->extent > capacity) continue;
    a.used += c.f->extent;
    a.saved_ns += static_cast<int64_t>(c.benefit_ns);
    a.picks.push_back(
        {std::string(c.f->path), c.f->extent, c.f->read_ns, c.reread, static_cast<int64_t>(c.benefit_ns), c.f->bytes_read});
  }
  // Roll-ups: picks by role (train and validation data apart), warnings by
  // reason; a directory holding any other file that moved data is not merged.
  std::map<std::string, std::string, std::less<>> keys;
  std::vector<PathKey> pick_items, warn_items;
  std::vector<StageAdvice::Group> pick_groups, warn_groups;
  for (auto& p : a.picks) {
    // The items view the key in `keys`, never overwritten (a path is
    // picked or warned once; were it both, its first key would stay).
    const std::string& key =
        keys.try_emplace(p.path, std::string("stage ") + role_name(file_role(job.files.at(p.path), job))).first->second;
    pick_items.emplace_back(p.path, key);
    StageAdvice::Group g;
    g.name = p.path;
    g.files = 1;
    g.size = p.size;
    g.read_ns = p.read_ns;
    g.bytes_read = p.bytes_read;
    g.saved_ns = p.saved_ns;
    g.reread = p.reread;
    pick_groups.push_back(g);
  }
  for (auto& w : a.warning_items) {
    const std::string& key = keys.try_emplace(w.path, "warn " + w.reason).first->second;
    warn_items.emplace_back(w.path, key);
    StageAdvice::Group g;
    g.name = w.path;
    g.reason = w.reason;
    g.files = 1;
    g.size = w.size;
    g.read_ns = w.read_ns;
    g.bytes_read = w.bytes_read;
    g.reread = w.reread;
    warn_groups.push_back(g);
  }
  const auto universe = data_files(job, keys);
  a.groups = group_items(std::move(pick_groups), rollup_dirs(pick_items, universe));
  std::stable_sort(a.groups.begin(), a.groups.end(), [](auto& x, auto& y) { return x.saved_ns > y.saved_ns; });
  a.warning_groups = group_items(std::move(warn_groups), rollup_dirs(warn_items, universe));
  std::stable_sort(a.warning_groups.begin(), a.warning_groups.end(),
                   [](auto& x, auto& y) { return x.read_ns > y.read_ns; });
  return a;
}

namespace {

// Figures of the events tagged with an epoch; wall time from their first
// start to their last end (the training loop's span replaces it when known).
void fill_figures(const TagAgg& a, bool sizes_known, DlSummary::Figures& f) {
  f.wall_ns = a.last_ts > a.first_ts ? a.last_ts - a.first_ts : 0;
  f.next_ns = a.loader_wait_ns;
  f.startup_ns = a.loader_start_ns;
  f.shutdown_ns = a.loader_stop_ns;
  f.loader_wait_ns = a.loader_wait_ns + a.loader_start_ns + a.loader_stop_ns;
  f.batches = a.loader_waits;
  f.starts = a.loader_starts;
  f.compute_ns = a.compute_ns;
  f.io_ns = a.io_ns;
  f.read_ns = a.read_ns;
  f.reads = a.reads;
  f.events = a.events;
  f.bytes_read = sizes_known ? a.bytes_read : -1;
  f.bytes_written = sizes_known ? a.bytes_written : -1;
}

}  // namespace

DlSummary dl_summary(const Job& job) {
  DlSummary s;
  for (auto& [k, f] : job.funcs) {
    if (f.layer != Layer::kApp) continue;
    const std::string cat = lower(f.category), name = lower(f.name);
    const FuncInfo fi = classify(f.name, f.category);
    if (fi.is_loader_wait) {
      s.batches += f.count;
      s.loader_wait_ns += f.total_ns;
    }
    if (fi.is_loader_start) {
      s.startup_ns += f.total_ns;
      s.loader_wait_ns += f.total_ns;
    }
    if (fi.is_loader_stop) {
      s.shutdown_ns += f.total_ns;
      s.loader_wait_ns += f.total_ns;
    }
    if (loader_function(f)) s.present = true;
    if (cat == "checkpoint") s.checkpoint_calls.push_back({f.name, f.count, f.total_ns});
  }
  if (!job.by_epoch.empty()) s.present = true;
  if (!s.present) return s;

  // Epochs in numeric order when every value is an integer.
  bool numeric = true;
  for (auto& [k, a] : job.by_epoch) {
    char* endp = nullptr;
    std::strtoll(k.c_str(), &endp, 10);
    numeric = numeric && !k.empty() && endp && *endp == '\0';
  }
  std::set<std::string> values;
  for (auto& [k, a] : job.by_epoch) values.insert(k);
  for (auto& [k, a] : job.by_epoch_outside) values.insert(k);
  static const TagAgg kNone;
  auto agg = [](const std::map<std::string, TagAgg>& m, const std::string& k) -> const TagAgg& {
    auto it = m.find(k);
    return it == m.end() ? kNone : it->second;
  };
  for (const std::string& k : values) {
    DlSummary::Epoch e;
    e.value = k;
    const TagAgg& in = agg(job.by_epoch, k);
    fill_figures(in, job.sizes_known, e);
    fill_figures(agg(job.by_epoch_outside, k), job.sizes_known, e.outside);
    e.loop_known = in.loop_last != INT64_MIN && in.loop_last > in.loop_first;
    if (e.loop_known) {
      e.loop_first = in.loop_first;
      e.loop_last = in.loop_last;
      e.wall_ns = in.loop_last - in.loop_first;
    }
    e.loops = in.waiters.size();
    s.epochs.push_back(e);
  }
  if (numeric)
    std::stable_sort(s.epochs.begin(), s.epochs.end(), [](auto& x, auto& y) {
      return std::strtoll(x.value.c_str(), nullptr, 10) < std::strtoll(y.value.c_str(), nullptr, 10);
    });
  // Outside a loop: from its end to the next epoch's loop start, or to the
  // end of the trace after the last epoch.
  for (size_t i = 0; i < s.epochs.size(); ++i) {
    DlSummary::Epoch& e = s.epochs[i];
    if (!e.loop_known) continue;
    int64_t until = job.last_ts;
    for (size_t j = i + 1; j < s.epochs.size(); ++j)
      if (s.epochs[j].loop_known) {
        until = s.epochs[j].loop_first;
        break;
      }
    e.outside.wall_ns = std::max<int64_t>(0, until - e.loop_last);
  }
  if (s.epochs.size() >= 2) {
    const DlSummary::Epoch& first = s.epochs[0];
    double io = 0, rd = 0;
    for (size_t i = 1; i < s.epochs.size(); ++i) {
      const DlSummary::Epoch& e = s.epochs[i];
      if (first.batches > 0 && e.batches != first.batches) {
        s.left_out.push_back(e.value);
        continue;
      }
      s.compared.push_back(e.value);
      io += static_cast<double>(e.io_ns);
      rd += static_cast<double>(e.read_ns);
    }
    if (!s.compared.empty()) {
      s.has_first_vs_rest = true;
      s.first_io_ns = first.io_ns;
      s.first_read_ns = first.read_ns;
      s.rest_io_ns = io / static_cast<double>(s.compared.size());
      s.rest_read_ns = rd / static_cast<double>(s.compared.size());
    }
  }

  std::map<int, DlSummary::RoleFiles> roles;
  for (const FileAgg& f : job.files) {
    const Role role = file_role(f, job);
    DlSummary::RoleFiles& r = roles[static_cast<int>(role)];
    r.role = role;
    ++r.files;
    r.reads += f.reads;
    r.writes += f.writes;
    r.bytes_read += f.bytes_read;
    r.bytes_written += f.bytes_written;
    r.read_ns += f.read_ns;
    r.write_ns += f.write_ns;
    r.meta_ns += f.meta_ns;
  }
  for (auto& [k, r] : roles) {
    if (!job.sizes_known) r.bytes_read = r.bytes_written = -1;
    s.roles.push_back(r);
  }
  return s;
}

bool is_environment_file(std::string_view path, Role role) {
  if (role == Role::kLibrary) return true;
  // The system's directories, told apart by their second byte.
  if (path.size() >= 2 && path[0] == '/') {
    switch (path[1]) {
      case 'u': if (starts_with_lit(path, "/usr/")) return true; break;
      case 'l': if (starts_with_lit(path, "/lib/") || starts_with_lit(path, "/lib64/")) return true; break;
      case 'b': if (starts_with_lit(path, "/bin/")) return true; break;
      case 's': if (starts_with_lit(path, "/sbin/") || starts_with_lit(path, "/sys/")) return true; break;
      case 'e': if (starts_with_lit(path, "/etc/")) return true; break;
      case 'p': if (starts_with_lit(path, "/proc/")) return true; break;
      case 'd': if (starts_with_lit(path, "/dev/")) return true; break;
      case 'o': if (starts_with_lit(path, "/opt/conda/")) return true; break;
      default: break;
    }
  }
  // Python packages and caches; MPI session directories and shared-memory
  // segments (Open MPI vader/sm, MPICH, UCX) outside /dev/shm. All but one
  // start with '/': each '/' of the path is tested on the byte after it
  // (one scan, not one per name).
  const char* const end = path.data() + path.size();
  for (const char* s = path.data(); s < end;) {
    s = static_cast<const char*>(std::memchr(s, '/', static_cast<size_t>(end - s)));
    if (!s) break;
    const std::string_view rest(s, static_cast<size_t>(end - s));
    ++s;
    if (rest.size() < 2) break;
    switch (rest[1]) {
      case 's': if (starts_with_lit(rest, "/site-packages/")) return true; break;
      case 'd': if (starts_with_lit(rest, "/dist-packages/")) return true; break;
      case '_': if (starts_with_lit(rest, "/__pycache__/")) return true; break;
      case 'o': if (starts_with_lit(rest, "/ompi.") || starts_with_lit(rest, "/openmpi-sessions")) return true; break;
      case 'm': if (starts_with_lit(rest, "/mpich")) return true; break;
      case 'u': if (starts_with_lit(rest, "/ucx")) return true; break;
      default: break;
    }
  }
  if (contains(path, "vader_segment")) return true;
  return ends_with_lit(path, ".pyc") || ends_with_lit(path, ".so") || contains(path, ".so.");
}

namespace {

// A Chrome trace-event file (what `strata convert --to chrome` writes) given
// to analyze: JSON, not DFTracer's .pfw. Returns what to tell the user, or "".
std::string chrome_json_note(const std::string& input) {
  std::error_code ec;
  if (!fs::is_regular_file(input, ec) || ends_with_any(lower(input), {".pfw", ".pfw.gz"})) return "";
  std::ifstream f(input, std::ios::binary);
  char head[4096];
  f.read(head, sizeof head);
  std::string_view h(head, static_cast<size_t>(f.gcount()));
  size_t k = h.find_first_not_of(" \t\r\n");
  // The object form, which names its array. The bare array form is told
  // from DFTracer's (also '[' and "ph", one event per line, and maybe named
  // .json) by the input detector (src/importer/detect.cc).
  if (k == std::string_view::npos || h[k] != '{' || h.find("\"traceEvents\"") == std::string_view::npos) return "";
  return input +
         ": a Chrome trace-event JSON file (as `strata convert --to chrome` writes, for Perfetto or "
         "chrome://tracing), not a trace strata analyzes; give strata analyze the strata trace directory or "
         ".strata file, or a DFTracer .pfw / .pfw.gz file or directory";
}

// The tag keys the input's events carry (for a --by KEY that none carries).
class TagKeys : public UnitConsumer {
 public:
  void begin(const std::string&, const Tables* t, bool) override { tables_ = t; }
  void process(const ProcessMeta&) override {}
  void event(const IoEvent& e) override {
    if (!tables_ || e.ctx == 0 || e.ctx >= tables_->ctxs.size() || !seen_.insert(e.ctx).second) return;
    for (auto& tag : tables_->ctxs[e.ctx]) keys.emplace(tag.key);
  }
  void end() override {
    tables_ = nullptr;
    seen_.clear();
  }
  std::set<std::string> keys;

 private:
  const Tables* tables_ = nullptr;
  std::set<uint32_t> seen_;
};

std::set<std::string> tag_keys(const std::string& input) {
  std::unique_ptr<Source> src = open_source(input);
  TagKeys keys;
  for (size_t i = 0; i < src->units().size(); ++i) src->read_unit(i, keys);
  return keys.keys;
}


std::string options_error(const AnalyzeOptions& opts) {
  if (opts.top < 0) return "--top " + std::to_string(opts.top) + ": the number of rows must be 0 or more";
  const std::vector<std::string> names = pass_names(opts);
  for (auto& s : opts.sections)
    if (std::find(names.begin(), names.end(), s) == names.end()) {
      std::string list;
      for (auto& n : names) list += (list.empty() ? "" : ", ") + n;
      return "--section " + s + ": no such section; the sections (passes) are: " + list;
    }
  return "";
}

}  // namespace

std::string by_key_error(const Analysis& a) {
  const AnalyzeOptions& o = a.opts();
  if (o.by.empty()) return "";
  for (auto& [value, agg] : a.job().by_tag)
    if (value != "(none)") return "";
  std::string msg = "--by " + o.by + ": no event of " + o.input + " carries the tag \"" + o.by + "\"; ";
  std::set<std::string> keys = tag_keys(o.input);
  if (keys.empty()) return msg + "its events carry no tags";
  msg += "the tag keys it has:";
  for (auto& k : keys) msg += " " + k;
  return msg;
}

static int report(const Analysis& a, const AnalyzeOptions& opts, std::ostream& out, std::ostream& err);

int run_analyze(const AnalyzeOptions& opts, std::ostream& out, std::ostream& err) {
  if (opts.input.empty()) {
    err << "strata analyze: no trace given\n";
    return 2;
  }
  if (std::string e = options_error(opts); !e.empty()) {
    err << "strata analyze: " << e << "\n";
    return 2;
  }
  if (std::string note = chrome_json_note(opts.input); !note.empty()) {
    err << "strata analyze: " << note << "\n";
    return 1;
  }
  std::optional<Analysis> analysis;
  try {
    analysis.emplace(run_passes(opts));
  } catch (const InputError& e) {
    err << "strata analyze: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "strata analyze: " << opts.input << ": " << e.what() << "\n";
    return 1;
  }
  if (opts.exiting) {
    // Still reachable through this pointer at exit (no leak report).
    static Analysis* left_to_exit = nullptr;
    left_to_exit = new Analysis(std::move(*analysis));
    analysis.reset();
    return report(*left_to_exit, opts, out, err);
  }
  return report(*analysis, opts, out, err);
}

// The reports of a finished analysis; the exit status of run_analyze.
static int report(const Analysis& a, const AnalyzeOptions& opts, std::ostream& out, std::ostream& err) {
  const Job& job = a.job();
  if (std::string e = by_key_error(a); !e.empty()) {
    err << "strata analyze: " << e << "\n";
    return 2;
  }
  if (!opts.html.empty()) {
    std::ofstream f(opts.html);
    if (!f) {
      err << "strata analyze: cannot write " << opts.html << ": " << std::strerror(errno) << "\n";
      return 1;
    }
    if (!a.write_html(f, err)) return 1;
    f.close();
    if (f.fail()) {
      err << "strata analyze: error writing " << opts.html << " (disk full?): the report is incomplete\n";
      return 1;
    }
    std::error_code ec;
    const auto size = fs::file_size(opts.html, ec);
    err << "strata analyze: wrote the HTML report to " << fs::absolute(opts.html, ec).string();
    if (!ec) err << " (" << (size + 1023) / 1024 << " KiB)";
    err << "\n";
  }
  if (opts.darshan)
    write_darshan(job, out, opts.path);
  else if (opts.json)
    a.write_json(out);
  else if (opts.html.empty())
    a.write_text(out);
  // Output to a full disk must not look like success.
  out.flush();
  if (out.fail() || (&out == &std::cout && (std::fflush(stdout) != 0 || std::ferror(stdout)))) {
    err << "strata analyze: error writing the output (disk full?): it is incomplete\n";
    return 1;
  }
  return 0;
}

}  // namespace strata::analysis
