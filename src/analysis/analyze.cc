#include "analysis/analyze.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "analysis/pfw_source.h"
#ifdef STRATA_ANALYSIS_HAVE_READER
#include "analysis/strata_source.h"
#endif

namespace strata::analysis {

namespace fs = std::filesystem;

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

static std::unique_ptr<Source> open_source(const std::string& input) {
  std::error_code ec;
  if (!fs::exists(input, ec)) throw InputError(input + ": no such file or directory");
  if (fs::is_directory(input, ec)) {
    bool pfw = false, strata = false;
    for (auto& de : fs::directory_iterator(input, ec)) {
      std::string p = de.path().string();
      if (looks_like_pfw(p)) pfw = true;
      if (de.path().extension() == ".strata") strata = true;
    }
    if (strata) {
#ifdef STRATA_ANALYSIS_HAVE_READER
      return std::make_unique<StrataSource>(input);
#else
      throw InputError(input + ": strata traces need the reader library (not built)");
#endif
    }
    if (pfw) return std::make_unique<PfwSource>(input);
    throw InputError(input + ": directory holds no strata trace file (*.strata) and no DFTracer file (*.pfw, *.pfw.gz)");
  }
  if (fs::file_size(input, ec) == 0) throw InputError(input + ": empty file");
  FILE* fp = std::fopen(input.c_str(), "rb");
  if (!fp) throw InputError(input + ": cannot open");
  unsigned char head[8] = {};
  size_t n = std::fread(head, 1, 8, fp);
  std::fclose(fp);
  if (n == 8 && std::memcmp(head, "STRATA\0\n", 8) == 0) {
#ifdef STRATA_ANALYSIS_HAVE_READER
    return std::make_unique<StrataSource>(input);
#else
    throw InputError(input + ": strata traces need the reader library (not built)");
#endif
  }
  size_t k = 0;
  while (k < n && std::isspace(head[k])) ++k;
  if (looks_like_pfw(input) || (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) ||
      (k < n && (head[k] == '[' || head[k] == '{')))
    return std::make_unique<PfwSource>(input);
  throw InputError(input + ": not a strata trace or a DFTracer trace (unknown file format)");
}

Job analyze_job(const AnalyzeOptions& opts) {
  std::unique_ptr<Source> src = open_source(opts.input);
  Job job;
  job.source_kind = src->kind();
  AggConfig cfg;
  cfg.by_key = opts.by;
  const size_t nunits = src->units().size();
  unsigned nthreads = opts.threads > 0 ? static_cast<unsigned>(opts.threads)
                                       : std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
  nthreads = static_cast<unsigned>(std::min<size_t>(nthreads, nunits));
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::string first_error;
  // Merge in unit order so results do not depend on thread timing.
  std::vector<std::unique_ptr<UnitAgg>> done(nunits);
  size_t merged = 0;
  auto worker = [&]() {
    while (true) {
      size_t i = next.fetch_add(1);
      if (i >= nunits) return;
      {
        std::lock_guard<std::mutex> lk(mu);
        if (!first_error.empty()) return;
      }
      auto agg = std::make_unique<UnitAgg>(cfg);
      try {
        src->read_unit(i, *agg);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lk(mu);
        if (first_error.empty()) first_error = e.what();
        return;
      }
      std::lock_guard<std::mutex> lk(mu);
      done[i] = std::move(agg);
      while (merged < nunits && done[merged]) {
        done[merged]->merge_into(job);
        done[merged].reset();
        ++merged;
      }
    }
  };
  if (nthreads <= 1) {
    worker();
  } else {
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < nthreads; ++t) ts.emplace_back(worker);
    for (auto& t : ts) t.join();
  }
  if (!first_error.empty()) throw InputError(first_error);
  if (!job.sizes_known)
    job.warnings.push_back(
        "sizes unknown: the DFTracer trace has no arguments (DFTRACER_INC_METADATA was off); "
        "counts and times are exact, bytes, offsets and sizes are not recorded");
  uint64_t clipped = 0;
  for (auto& p : job.procs) clipped += p.clipped;
  if (clipped)
    job.warnings.push_back(std::to_string(clipped) +
                           " intervals reached back past the bounded interval window; unions are lower bounds");
  return job;
}

const char* role_name(Role r) {
  switch (r) {
    case Role::kTrainData: return "dataset(train)";
    case Role::kValData: return "dataset(validation)";
    case Role::kCheckpoint: return "checkpoint";
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

static bool has_ext(const std::string& p, std::initializer_list<const char*> exts) {
  for (const char* e : exts) {
    size_t n = std::strlen(e);
    if (p.size() >= n && p.compare(p.size() - n, n, e) == 0) return true;
  }
  return false;
}

FileVerdict classify_file(const FileAgg& f, const Job& job) {
  FileVerdict v;
  v.path = f.path;
  // Processes that share the file: those that read or wrote it (a launcher
  // that only stat()s or opens it does not share its data; the text report's
  // "I/O strategy" counts the same way). Metadata-only files: every process.
  std::vector<int64_t> pids;
  const bool any_data = f.reads + f.writes > 0;
  for (auto& fp : f.procs)
    if ((!any_data || fp.pf.reads + fp.pf.writes > 0) && std::find(pids.begin(), pids.end(), fp.pid) == pids.end())
      pids.push_back(fp.pid);
  v.nprocs = pids.size();
  v.shared = v.nprocs > 1;
  const bool rd = f.reads > 0, wr = f.writes > 0;
  v.access = rd && wr ? "read-write" : rd ? "read-only" : wr ? "write-only" : "metadata-only";
  if (job.sizes_known && f.extent > 0 && f.bytes_read > 0)
    v.reread = static_cast<double>(f.bytes_read) / static_cast<double>(f.extent);
  // whole vs partial per reading process
  int whole = 0, partial = 0;
  for (auto& fp : f.procs) {
    if (fp.pf.reads == 0 || !fp.pf.offsets_known || f.extent <= 0) continue;
    double cov = static_cast<double>(fp.pf.coverage.measure()) / static_cast<double>(f.extent);
    (cov >= 0.99 ? whole : partial)++;
  }
  v.read_extent = whole + partial == 0 ? "unknown" : whole >= partial ? "whole" : "partial";
  if (f.counted_reads > 1 && job.sizes_known) {
    double seq = static_cast<double>(f.seq_reads) / static_cast<double>(f.counted_reads - 1);
    v.pattern = seq >= 0.8 ? "sequential" : seq <= 0.2 ? "random" : "mixed";
  } else {
    v.pattern = "unknown";
  }
  v.metadata_bound = f.meta_ns > f.read_ns + f.write_ns;

  const std::string p = lower(f.path);
  auto ev = [&](const std::string& s) { v.evidence.push_back(s); };
  int64_t max_read_size = 0;
  size_t write_epochs = 0;
  for (auto& fp : f.procs) {
    max_read_size = std::max(max_read_size, fp.pf.max_read);
    write_epochs = std::max(write_epochs, fp.pf.write_epochs.size());
  }
  const bool lib_path = p.find("/site-packages/") != std::string::npos ||
                        p.find("/dist-packages/") != std::string::npos || p.rfind("/usr/lib", 0) == 0 ||
                        p.rfind("/lib/", 0) == 0 || p.rfind("/lib64/", 0) == 0 || p.rfind("/usr/share", 0) == 0;
  const bool lib_ext = has_ext(p, {".so", ".py", ".pyc", ".pyi", ".pth"}) || p.find(".so.") != std::string::npos;
  const bool ckpt_name = p.find("ckpt") != std::string::npos || p.find("checkpoint") != std::string::npos ||
                         has_ext(p, {".pt", ".pth", ".ckpt", ".safetensors", ".h5.ckpt", ".keras"});
  const bool cfg_ext = has_ext(p, {".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".conf"}) ||
                       p.rfind("/etc/", 0) == 0;
  const bool log_ext = has_ext(p, {".log", ".out", ".err", ".csv.log"}) || p.find("/log") != std::string::npos ||
                       p.rfind("/dev/pts", 0) == 0 || p.rfind("/dev/tty", 0) == 0;
  const bool data_ext = has_ext(p, {".npz", ".npy", ".tfrecord", ".tfrecords", ".h5", ".hdf5", ".jpg", ".jpeg",
                                    ".png", ".bin", ".dat", ".csv", ".parquet", ".arrow", ".lmdb", ".mdb", ".rec",
                                    ".pkl", ".tar", ".txt", ".raw", ".idx", ".zarr"});
  const bool val_name = p.find("val") != std::string::npos || p.find("valid") != std::string::npos ||
                        p.find("test") != std::string::npos || p.find("eval") != std::string::npos;

  if (lib_ext || (lib_path && !wr)) {
    v.role = Role::kLibrary;
    if (lib_ext) ev("code/library file name (" + f.path.substr(f.path.find_last_of('.') + 1) + ")");
    if (lib_path) ev("under a system or package directory");
    if (f.mmaps) ev(std::to_string(f.mmaps) + " mmap(s): loaded, not read");
    return v;
  }
  if (wr && !rd && log_ext) {
    v.role = Role::kLog;
    ev("write-only, log-like name");
    return v;
  }
  if (wr && (ckpt_name || write_epochs >= 2 || (f.bytes_written >= (1 << 20) && !log_ext && !rd))) {
    v.role = Role::kCheckpoint;
    if (ckpt_name) ev("checkpoint-like name");
    if (write_epochs >= 2) ev("written in " + std::to_string(write_epochs) + " epochs");
    if (f.bytes_written >= (1 << 20)) ev("large writes (" + std::to_string(f.bytes_written) + " B)");
    if (rd) ev("also read back (restore)");
    return v;
  }
  if (wr && !rd) {
    v.role = log_ext || f.writes > 0 ? Role::kLog : Role::kOther;
    ev("write-only, small appends");
    return v;
  }
  if (rd && cfg_ext && f.extent < (1 << 20)) {
    v.role = Role::kConfig;
    ev("configuration file name");
    ev("small (" + std::to_string(f.extent) + " B) and read-only");
    return v;
  }
  if (rd) {
    bool dataset = data_ext || v.reread > 1.5 || f.extent >= (1 << 20) || f.reads >= 16 || v.nprocs > 1;
    if (dataset) {
      v.role = val_name ? Role::kValData : Role::kTrainData;
      if (data_ext) ev("data-set file name");
      if (v.reread > 1.5) ev("re-read " + std::to_string(v.reread).substr(0, 4) + "x (epochs)");
      if (f.reads >= 16) ev(std::to_string(f.reads) + " reads");
      if (v.nprocs > 1) ev("read by " + std::to_string(v.nprocs) + " processes");
      if (val_name) ev("validation-like name");
      if (!job.sizes_known) ev("sizes unknown: decided from counts and names only");
      return v;
    }
    if (cfg_ext) {
      v.role = Role::kConfig;
      ev("configuration file name");
      return v;
    }
  }
  v.role = Role::kOther;
  if (!rd && !wr) ev("metadata only (stat/open without data)");
  return v;
}

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
  for (auto& [path, f] : job.files) {
    if (f.reads == 0 || f.read_ns <= 0 || f.extent <= 0 || f.bytes_read <= 0) continue;
    FileVerdict v = classify_file(f, job);
    if (v.role == Role::kLibrary || v.role == Role::kLog) continue;
    const double reread = static_cast<double>(f.bytes_read) / static_cast<double>(f.extent);
    // Staging reads the file once at the observed speed; later reads run
    // `speedup` times faster.
    const double benefit = static_cast<double>(f.read_ns) * (1.0 - 1.0 / speedup - 1.0 / reread);
    if (reread <= 1.01) {
      a.warnings.push_back(path + ": read once (re-read " + std::to_string(reread).substr(0, 4) +
                           "x): staging costs a full read and saves nothing");
      continue;
    }
    if (capacity >= 0 && f.extent > capacity) {
      a.warnings.push_back(path + ": " + std::to_string(f.extent) + " B does not fit the capacity");
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
    a.picks.push_back({c.f->path, c.f->extent, c.f->read_ns, c.reread, static_cast<int64_t>(c.benefit_ns)});
  }
  return a;
}

int run_analyze(const AnalyzeOptions& opts, std::ostream& out, std::ostream& err) {
  if (opts.input.empty()) {
    err << "strata analyze: no trace given\n";
    return 2;
  }
  Job job;
  try {
    job = analyze_job(opts);
  } catch (const InputError& e) {
    err << "strata analyze: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "strata analyze: " << opts.input << ": " << e.what() << "\n";
    return 1;
  }
  if (!opts.html.empty()) {
    std::ofstream f(opts.html);
    if (!f) {
      err << "strata analyze: cannot write " << opts.html << "\n";
      return 1;
    }
    if (!write_html(job, opts, f, err)) return 1;
  }
  if (opts.darshan)
    write_darshan(job, out);
  else if (opts.json)
    write_json(job, opts, out);
  else if (opts.html.empty())
    write_text(job, opts, out);
  return 0;
}

}  // namespace strata::analysis
