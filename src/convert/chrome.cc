// Chrome Trace Event JSON. Complete events become "X" events with args holding
// the I/O fields and tags, nested per thread (chrome_layout.h); processes and
// threads are named with "M" events from what strata knows; flow events
// ("s"/"f") join each DataLoader batch to the wait that received it.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>

#include "convert/chrome_layout.h"
#include "convert/convert.h"
#include "convert/events.h"
#include "convert/json_out.h"
#include "format/format.h"

namespace strata::convert {

namespace fmtf = strata::format;

namespace {

// Chrome args: the layer, then the event's fields.
void write_args(JsonOut& j, const EventRef& e) {
  j.raw(",\"args\":{\"layer\":");
  j.str(e.name().category);
  write_fields(j, e);
  j.ch('}');
}

}  // namespace

namespace {

// The tags that name processes and pair batches, per context id of a file.
struct CtxKeys {
  bool known = false;
  int64_t worker = -1, loader = -1, epoch = INT64_MIN, step = INT64_MIN;
};

void metadata_event(JsonOut& j, const char* what, int64_t pid, int64_t tid, const std::string& name) {
  j.raw("{\"ph\":\"M\",\"name\":\"");
  j.raw(what);
  j.raw("\",\"pid\":");
  j.i64(pid);
  j.raw(",\"tid\":");
  j.i64(tid);
  j.raw(",\"args\":{\"name\":");
  j.str(name);
  j.raw("}}");
}

// A flow end point bound to the slice around `ts`: the last nanosecond
// before the slice ends (a batch leaving its worker, a wait returning).
void flow_event(JsonOut& j, char ph, uint64_t id, const BatchFlows::Slice& s) {
  const int64_t ts = s.end - std::min<int64_t>(1, s.end - s.start);
  j.raw("{\"ph\":\"");
  j.ch(ph);
  j.raw("\",\"name\":\"batch\",\"cat\":\"dataloader\",\"id\":");
  j.u64(id);
  if (ph == 'f') j.raw(",\"bp\":\"e\"");
  j.raw(",\"pid\":");
  j.i64(s.pid);
  j.raw(",\"tid\":");
  j.i64(s.tid);
  j.raw(",\"ts\":");
  j.micros(ts);
  j.ch('}');
}

}  // namespace

uint64_t write_chrome(const std::string& trace, const std::string& out_path) {
  reader::TraceReader tr(trace);
  OutputFile out(out_path);
  uint64_t n = 0;
  {
    JsonOut j(out.sink());
    j.raw("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"strata\"},\"traceEvents\":[\n");
    bool first = true;
    auto begin = [&] {
      if (!first) j.raw(",\n");
      first = false;
    };
    const reader::ProcessInfo* proc = nullptr;
    Visitor v;
    int64_t shift = 0;  // host monotonic ns -> trace ns, per file
    ProcessFacts facts;
    std::vector<CtxKeys> ctx;
    std::unordered_map<uint64_t, ThreadTracks> tracks;  // by tid, this file
    std::map<int64_t, std::vector<std::string>> process_names;  // pid -> one name per image (exec)
    BatchFlows flows;
    auto keys = [&](const reader::Dictionary& dict, uint32_t c) -> const CtxKeys& {
      if (c >= ctx.size()) ctx.resize(c + 1);
      CtxKeys& k = ctx[c];
      if (k.known) return k;
      k.known = true;
      for (const auto& t : dict.context(c)) {
        if (!t.is_int) continue;
        std::string_view key = dict.str(t.key);
        if (key == "worker") k.worker = t.int_value;
        else if (key == "loader") k.loader = t.int_value;
        else if (key == "epoch") k.epoch = t.int_value;
        else if (key == "step") k.step = t.int_value;
      }
      return k;
    };
    v.begin_file = [&](const reader::FileReader& f) {
      proc = &f.process();
      shift = tr.to_trace_ns(*proc, 0);
      facts = ProcessFacts{};
      facts.pid = proc->pid;
      facts.rank = proc->rank;
      facts.command = proc->cmdline().empty() ? proc->exe : proc->cmdline();
      ctx.clear();
      tracks.clear();
      flows.parent(proc->pid, proc->ppid);
    };
    v.end_file = [&](const reader::FileReader& f) {
      for (const auto& [k, val] : proc->metadata)
        if (k == "dataloader_worker" && facts.worker < 0) facts.worker = std::atoll(val.c_str());
      process_names[proc->pid].push_back(process_label(facts));
      // Thread names are known once the file's DICT blocks are read.
      std::map<uint64_t, std::string> names;
      for (const auto& [tid, sid] : f.dict().threads())
        if (sid) names[tid] = f.dict().str(sid);
      for (const auto& [tid, t] : tracks)
        if (!names.count(tid)) names[tid] = static_cast<int64_t>(tid) == proc->pid ? "main thread" : "thread " + std::to_string(tid);
      for (const auto& [tid, name] : names) {
        begin();
        metadata_event(j, "thread_name", proc->pid, static_cast<int64_t>(tid), name);
        auto it = tracks.find(tid);
        for (int k = 1; it != tracks.end() && k < it->second.tracks_used(); ++k) {
          begin();
          metadata_event(j, "thread_name", proc->pid, track_tid(static_cast<int64_t>(tid), k),
                         name + " (overlapping events " + std::to_string(k) + ")");
        }
      }
    };
    v.event = [&](const EventRef& e) {
      const auto& b = e.batch;
      size_t i = e.i;
      const auto& nm = e.name();
      const int64_t ts = static_cast<int64_t>(b.ts[i]) + shift;
      const CtxKeys& k = keys(e.file.dict(), b.ctx[i]);
      if (k.worker >= 0) facts.worker = k.worker;
      if (k.epoch != INT64_MIN) {
        facts.epoch_min = std::min(facts.epoch_min, k.epoch);
        facts.epoch_max = std::max(facts.epoch_max, k.epoch);
      }
      begin();
      const char* ph = "X";
      if (nm.kind == static_cast<uint8_t>(fmtf::EventKind::kInstant)) ph = "i";
      if (nm.kind == static_cast<uint8_t>(fmtf::EventKind::kCounter)) ph = "C";
      int64_t tid = static_cast<int64_t>(b.tid);
      if (ph[0] == 'X') {
        const int64_t dur = static_cast<int64_t>(b.dur[i]);
        tid = track_tid(tid, tracks[b.tid].place(ts, ts + dur));
        const BatchFlows::Slice slice{proc->pid, tid, ts, ts + dur};
        if (nm.name == "dataloader.batch" && k.step != INT64_MIN) {
          flows.batch(k.loader, k.epoch, k.step, slice);
          if (k.loader >= 0) facts.loader = k.loader;
        } else if (nm.name == "dataloader.next" && k.step != INT64_MIN) {
          flows.next(k.loader, k.epoch, k.step, slice);
          facts.waits_for_batches = true;
        }
      }
      j.raw("{\"ph\":\"");
      j.raw(ph);
      j.raw("\",\"name\":");
      j.str(nm.name);
      j.raw(",\"cat\":");
      j.str(nm.category);
      j.raw(",\"pid\":");
      j.i64(proc->pid);
      j.raw(",\"tid\":");
      j.i64(tid);
      j.raw(",\"ts\":");
      j.micros(ts);
      if (ph[0] == 'X') {
        j.raw(",\"dur\":");
        j.micros(static_cast<int64_t>(b.dur[i]));
        write_args(j, e);
      } else if (ph[0] == 'C') {
        j.raw(",\"args\":{");
        j.key(nm.name);
        j.i64(b.size[i]);
        j.ch('}');
      } else {
        j.raw(",\"s\":\"t\"");
        write_args(j, e);
      }
      j.ch('}');
      j.maybe_flush();
      ++n;
    };
    visit_trace(trace, v);
    // A pid that exec'ed has one image (file) per program: "bash -> python3 train.py".
    for (const auto& [pid, images] : process_names) {
      std::string name;
      for (const auto& im : images) name += (name.empty() ? "" : " -> ") + im;
      begin();
      metadata_event(j, "process_name", pid, pid, name);
    }
    uint64_t id = 0;
    for (const auto& f : flows.flows()) {
      ++id;
      begin();
      flow_event(j, 's', id, f.from);
      begin();
      flow_event(j, 'f', id, f.to);
      j.maybe_flush();
    }
    j.raw("\n]}\n");
    j.flush();
    if (j.failed()) throw std::runtime_error(out_path + ": write failed");
  }
  out.close();
  return n;
}

}  // namespace strata::convert
