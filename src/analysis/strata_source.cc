#include "analysis/strata_source.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>

#include "format/format.h"
#include "strata/reader.h"

namespace strata::analysis {

namespace fs = std::filesystem;

bool looks_like_strata(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (auto& de : fs::directory_iterator(path, ec))
      if (de.path().extension() == format::kFileSuffix) return true;
    return false;
  }
  FILE* fp = std::fopen(path.c_str(), "rb");
  if (!fp) return false;
  char magic[8] = {};
  size_t n = std::fread(magic, 1, 8, fp);
  std::fclose(fp);
  return n == 8 && std::memcmp(magic, format::kFileMagic, 8) == 0;
}

StrataSource::StrataSource(const std::string& path) {
  try {
    trace_ = std::make_unique<reader::TraceReader>(path);
    files_ = trace_->files();
  } catch (const reader::FormatError& e) {
    throw InputError(e.what());
  }
}

StrataSource::~StrataSource() = default;

namespace {

// One thread's decoded batches, waiting to be merged with the other threads'
// in order of end time.
struct ThreadQueue {
  std::deque<std::unique_ptr<reader::EventBatch>> batches;
  size_t pos = 0;     // next event in batches.front()
  uint64_t head = 0;  // end time of that event (valid while batches is not empty)
  void refresh_head() {
    const auto& b = *batches.front();
    head = b.ts[pos] + b.dur[pos];
  }
};

// "0" to "99" as views into one static array: small tag values (epochs,
// ranks, ...) need neither formatting nor a copy in the CtxTable.
struct SmallIntText {
  char text[10 + 2 * 90] = {};
  constexpr SmallIntText() {
    for (int v = 0; v < 10; ++v) text[v] = static_cast<char>('0' + v);
    for (int v = 10; v < 100; ++v) {
      text[10 + 2 * (v - 10)] = static_cast<char>('0' + v / 10);
      text[11 + 2 * (v - 10)] = static_cast<char>('0' + v % 10);
    }
  }
  std::string_view operator()(int v) const {  // 0 <= v < 100
    return v < 10 ? std::string_view(text + v, 1) : std::string_view(text + 10 + 2 * (v - 10), 2);
  }
};
constexpr SmallIntText kSmallIntText;

// What the merge needs of a name id (StrataSource::read_unit's name_flags):
// counters and span begin/end marks are no I/O events; the return value is
// known when the name records one (or says nothing of its fields).
constexpr uint8_t kSkipName = 1, kHasRet = 2;
uint8_t name_flags_of(uint8_t kind, uint32_t fields) {
  const bool skip = kind == static_cast<uint8_t>(format::EventKind::kCounter) ||
                    kind == static_cast<uint8_t>(format::EventKind::kBegin) ||
                    kind == static_cast<uint8_t>(format::EventKind::kEnd);
  const auto field_bits = static_cast<uint8_t>(fields);
  const bool has_ret = (field_bits & format::kFieldRet) != 0 || field_bits == 0;
  return static_cast<uint8_t>((skip ? kSkipName : 0) | (has_ret ? kHasRet : 0));
}

}  // namespace

// With fewer files than threads, each unit gets the threads the other units
// leave idle. The first goes to its passes (FanOut: the io pass on a thread
// of its own beside the others); the rest decode blocks ahead. More pass
// groups would not help: the io pass is the longest. Never more threads than
// asked for: on 2 cores a third one made every hand-over wait for a core.
size_t StrataSource::threads_per_unit() const {
  const size_t running = std::max<size_t>(1, std::min<size_t>(threads_, files_.size()));
  return std::max<size_t>(1, threads_ / running);
}

unsigned StrataSource::unit_threads() const { return static_cast<unsigned>(std::min<size_t>(2, threads_per_unit())); }

unsigned StrataSource::decode_threads() const { return static_cast<unsigned>(threads_per_unit() - unit_threads()); }

void StrataSource::read_unit(size_t idx, UnitConsumer& c) {
  const std::string& file = files_[idx];
  try {
    reader::ReadOptions options;
    options.decode_threads = decode_threads();
    options.before_dict_change = [&c] { c.sync_point(); };
    reader::FileReader r(file, options);
    const reader::ProcessInfo& pi = r.process();
    const reader::Dictionary& dict = r.dict();
    Tables tables;
    tables.str = [&dict](uint32_t id) -> std::string_view { return dict.str(id); };
    tables.str_storage = dict.string_storage();
    // Per name id, what the merge needs of it in one byte (name_flags).
    std::vector<uint8_t> name_flags;
    // Ids the dictionary had skipped at the last sync (only in files that
    // define ids out of order): filled in once a later DICT block defines them.
    std::vector<std::pair<uint32_t, uint32_t>> name_gaps, ctx_gaps;
    auto refill_gaps = [&]() {
      for (auto [lo, hi] : name_gaps)
        for (uint32_t id = lo; id < hi && id < tables.funcs.size(); ++id)
          if (dict.has_name(id)) {
            const reader::NameInfo& n = dict.name(id);
            tables.funcs[id] = classify(n.name, n.category);
            name_flags[id] = name_flags_of(n.kind, n.fields);
          }
      bool ctx_filled = false;
      for (auto [lo, hi] : ctx_gaps)
        for (uint32_t id = lo; id < hi && !ctx_filled; ++id) ctx_filled = dict.has_context(id);
      if (ctx_filled) tables.ctxs.clear();  // the table is packed: made again
      name_gaps = dict.name_gaps().ranges();
      ctx_gaps = dict.context_gaps().ranges();
    };
    auto sync = [&]() {
      refill_gaps();
      while (tables.funcs.size() < dict.num_names() || tables.funcs.empty()) {
        uint32_t id = static_cast<uint32_t>(tables.funcs.size());
        if (id == 0 || id >= dict.num_names()) {
          tables.funcs.push_back(classify("", "app"));
          name_flags.push_back(name_flags_of(0, 0));
          if (id >= dict.num_names()) break;
          continue;
        }
        const reader::NameInfo& n = dict.name(id);
        tables.funcs.push_back(classify(n.name, n.category));
        name_flags.push_back(name_flags_of(n.kind, n.fields));
      }
      if (tables.ctxs.size() < dict.num_contexts()) {
        size_t more_tags = 0;
        for (size_t id = tables.ctxs.size(); id < dict.num_contexts(); ++id)
          more_tags += dict.context(static_cast<uint32_t>(id)).size();
        tables.ctxs.reserve_more(dict.num_contexts() - tables.ctxs.size(), more_tags);
      }
      while (tables.ctxs.size() < dict.num_contexts() || tables.ctxs.empty()) {
        uint32_t id = static_cast<uint32_t>(tables.ctxs.size());
        // Traces tagged per step hold a context per few events: the tags
        // built in place in the table's one array.
        tables.ctxs.begin_next();
        if (id > 0) {
          std::span<const reader::Tag> in = dict.context(id);
          for (const reader::Tag& t : in) {
            CtxTag& ct = tables.ctxs.add_tag();
            ct.key = dict.str(t.key);
            ct.is_int = t.is_int;
            ct.int_value = t.int_value;
            if (t.is_int && t.int_value >= 0 && t.int_value < 100) {
              ct.value = kSmallIntText(static_cast<int>(t.int_value));
            } else if (t.is_int) {
              char buf[24];
              const auto res = std::to_chars(buf, buf + sizeof buf, t.int_value);
              ct.value = tables.ctxs.keep(std::string_view(buf, static_cast<size_t>(res.ptr - buf)));
            } else {
              ct.value = dict.str(t.str_value);
            }
          }
        }
        if (id >= dict.num_contexts()) break;
      }
    };
    sync();

    ProcessMeta meta;
    meta.pid = pi.pid;
    meta.ppid = pi.ppid;
    meta.rank = pi.rank;
    meta.host = pi.hostname;
    meta.exe = pi.exe;
    meta.cmdline = pi.cmdline();
    meta.start_ns = trace_->to_trace_ns(pi, pi.start_mono_ns);
    meta.source_file = file;
    const int64_t shift = trace_->to_trace_ns(pi, pi.start_mono_ns) - static_cast<int64_t>(pi.start_mono_ns);

    c.begin(file, &tables, true);
    c.process(meta);
    // Files cut before their PROCESS block (empty: disk full at start) are
    // not units; the first unit reports them.
    if (idx == 0)
      for (const auto& s : trace_->skipped()) c.warning("skipped " + s.file + ": " + s.why);

    std::map<uint32_t, ThreadQueue> queues;
    std::vector<ThreadQueue*> by_tid;  // queues in tid order (ties go to the lowest tid)
    std::vector<std::unique_ptr<reader::EventBatch>> pool;
    size_t queued = 0;
    // Events go to the consumer in batches (UnitConsumer::events): one
    // virtual call per pass per batch instead of per event.
    std::vector<IoEvent> batch(kBatch);
    size_t batched = 0;
    auto deliver = [&]() {
      if (batched) c.events(std::span<const IoEvent>(batch.data(), batched));
      batched = 0;
    };

    auto emit = [&](ThreadQueue& q, uint64_t limit_end, bool bounded) {
      // Emits q's events while their end time <= limit_end (or all if !bounded).
      while (!q.batches.empty()) {
        const reader::EventBatch& b = *q.batches.front();
        const size_t n = b.size_events();
        const uint64_t* ts = b.ts.data();
        const uint64_t* dur = b.dur.data();
        // The run: the events before the first that ends after limit_end.
        size_t stop = n;
        if (bounded) {
          for (size_t i = q.pos; i < n; ++i)
            if (ts[i] + dur[i] > limit_end) {
              stop = i;
              break;
            }
        }
        queued -= stop - q.pos;
        // The columns as plain pointers: the stores to the IoEvents (one of
        // them a byte, which may alias anything) would reload each vector's
        // data pointer per event otherwise.
        const uint32_t* name = b.name.data();
        const uint32_t* path = b.path.data();
        const uint32_t* ctx = b.ctx.data();
        const int32_t* fd = b.fd.data();
        const int32_t* err = b.err.data();
        const int64_t* offset = b.offset.data();
        const int64_t* size = b.size.data();
        const int64_t* ret = b.ret.data();
        const uint8_t* mem_align = b.mem_align.data();
        const uint8_t* flags = name_flags.data();
        const size_t nflags = name_flags.size();
        const int64_t pid = pi.pid;
        const int64_t tid = b.tid;
        IoEvent* out = batch.data();
        size_t k = batched;
        for (size_t i = q.pos; i < stop; ++i) {
          const uint32_t nid = name[i];
          const uint8_t f = nid < nflags ? flags[nid] : kSkipName;
          if (f & kSkipName) continue;
          IoEvent& e = out[k];
          e.pid = pid;
          e.tid = tid;
          e.ts = static_cast<int64_t>(ts[i]) + shift;
          e.dur = static_cast<int64_t>(dur[i]);
          e.offset = offset[i];
          e.size = size[i];
          e.ret = ret[i];
          e.func = nid;
          e.path = path[i];
          e.ctx = ctx[i];
          e.fd = fd[i];
          e.err = err[i];
          e.mem_align = mem_align[i];
          e.has_ret = (f & kHasRet) != 0;
          if (++k == kBatch) {
            batched = k;
            deliver();
            k = 0;
          }
        }
        batched = k;
        q.pos = stop;
        if (stop < n) {
          q.head = ts[stop] + dur[stop];
          return;
        }
        pool.push_back(std::move(q.batches.front()));
        q.batches.pop_front();
        q.pos = 0;
      }
    };
    auto emit_min_run = [&]() {
      // Picks the queue with the earliest head; emits it up to the next head.
      ThreadQueue* best = nullptr;
      uint64_t best_end = UINT64_MAX, second = UINT64_MAX;
      // Threads interleave, so runs are short: this scan runs about once
      // per event and reads only the cached heads.
      for (ThreadQueue* q : by_tid) {
        if (q->batches.empty()) continue;
        const uint64_t h = q->head;
        if (h < best_end) {
          second = best_end;
          best_end = h;
          best = q;
        } else if (h < second) {
          second = h;
        }
      }
      if (!best) return false;
      emit(*best, second, second != UINT64_MAX);
      return true;
    };

    while (true) {
      std::unique_ptr<reader::EventBatch> b;
      if (!pool.empty()) {
        b = std::move(pool.back());
        pool.pop_back();
      } else {
        b = std::make_unique<reader::EventBatch>();
      }
      if (!r.next(*b)) break;
      sync();  // the tables grow only after a DICT block: c.sync_point() ran before it
      const size_t n = b->size_events();
      if (n == 0) continue;
      queued += n;
      auto [it, fresh] = queues.try_emplace(b->tid);
      if (fresh) {
        by_tid.clear();
        for (auto& [tid, q] : queues) by_tid.push_back(&q);
      }
      ThreadQueue& q = it->second;
      q.batches.push_back(std::move(b));
      if (q.batches.size() == 1) q.refresh_head();
      while (queued > kWindow) {
        if (!emit_min_run()) break;
      }
    }
    while (queued > 0) {
      if (!emit_min_run()) break;
    }
    deliver();
    c.sync_point();
    if (!r.profile().empty()) {
      std::vector<counters::PosixRecord> posix;
      std::vector<counters::StdioRecord> stdio;
      for (const reader::ProfileRecord& pr : r.profile()) {
        if (pr.path == 0) continue;
        if (pr.module == 0) {
          counters::PosixRecord rec;
          rec.file = pr.path;
          for (size_t j = 0; j < pr.counters.size() && j < counters::POSIX_NUM_INDICES; ++j) rec.counters[j] = pr.counters[j];
          for (size_t j = 0; j < pr.fcounters.size() && j < counters::POSIX_F_NUM_INDICES; ++j) rec.fcounters[j] = pr.fcounters[j];
          posix.push_back(rec);
        } else {
          counters::StdioRecord rec;
          rec.file = pr.path;
          for (size_t j = 0; j < pr.counters.size() && j < counters::STDIO_NUM_INDICES; ++j) rec.counters[j] = pr.counters[j];
          for (size_t j = 0; j < pr.fcounters.size() && j < counters::STDIO_F_NUM_INDICES; ++j) rec.fcounters[j] = pr.fcounters[j];
          stdio.push_back(rec);
        }
      }
      sync();
      c.profile(pi.pid, posix, stdio);
    }
    // trace-format.md section 12: a cut-short final block is the end of the
    // file, and readers should say so. Named by its file name: the report's
    // header names the trace directory (and a copy of the trace, efg
    // --compress's, gives the same report).
    const std::string name = std::filesystem::path(file).filename().string();
    if (r.truncated())
      c.warning(name + ": truncated: its last block is cut short (writer killed?); read up to the last complete block");
    else if (!r.has_footer())
      c.warning(name + ": no footer (process killed, or still running); read up to its last complete block");
    else if (const uint64_t dropped = r.stats().events_dropped)
      c.warning(name + ": " + std::to_string(dropped) +
                " events dropped (the tracer's buffer was full; the program ran on): this process's counts, bytes "
                "and times are lower bounds");
    c.end();
  } catch (const reader::FormatError& err) {
    throw InputError(err.what());
  }
}

}  // namespace strata::analysis
