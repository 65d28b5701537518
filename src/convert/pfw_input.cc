// `strata cat` and `strata convert --to chrome` of a DFTracer trace: records
// from src/importer, file names and hosts resolved through the FH/HH hash
// records. One output line/event per record; an aggregated record (2.x
// "ph": 3) carries "calls" (its dft_cnt) and its fields' min/max/sum. The
// Chrome output names each process from its start record's command line.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include <zlib.h>

#include "convert/convert.h"
#include "convert/json_out.h"
#include "importer/detect.h"
#include "importer/line_reader.h"
#include "importer/pfw_parser.h"
#include "strata/reader.h"

namespace strata::convert {

namespace {

using importer::NumField;
using importer::Phase;
using importer::PfwRecord;

// Calls fn(record, path-or-empty) for every call record (complete,
// aggregated, counter) of every file, and start(record, strings) for every
// DFTracer "start" record with the file's SH strings by hash (its cmd_hash
// and exec_hash name them); metadata resolves file and string hashes.
template <class Fn, class Start>
void walk_pfw(const std::string& trace, Fn&& fn, Start&& start) {
  for (const std::string& path : importer::dftracer_files(trace)) {
    std::unordered_map<uint64_t, std::string> files, strings;
    importer::ByteStream bs(path);
    importer::LineReader lines(bs);
    importer::PfwParser parser(path);
    importer::Line line;
    PfwRecord r;
    while (lines.next(line)) {
      if (!parser.parse(line, r)) continue;
      if (r.ph == Phase::kMetadata) {
        if (r.name == "FH" && r.has_value) files[r.value] = std::string(r.a_name);
        if (r.name == "SH" && r.has_value) strings[r.value] = std::string(r.a_name);
        continue;
      }
      if (r.ph == Phase::kUnknown) continue;
      if (r.cat == "dftracer" || r.type == importer::EventType::kDftracer) {  // start/end
        if (r.name == "start") start(r, std::as_const(strings));
        continue;
      }
      if (!r.has_ts) throw importer::ImportError(path + ":" + std::to_string(line.no) + ": event without \"ts\"");
      std::string_view file = r.a_fname;
      if (file.empty() && r.has_fhash) {
        auto it = files.find(r.fhash);
        if (it != files.end()) file = it->second;
      }
      fn(r, file);
    }
    if (!parser.saw_anything()) throw importer::ImportError(path + ": empty file (no DFTracer events)");
  }
}

void num(JsonOut& j, const char* key, const NumField& f) {
  if (!f.present) return;
  if (!f.ranged) {
    j.raw(",\"");
    j.raw(key);
    j.raw("\":");
    j.i64(f.v);
    return;
  }
  // The parts the record wrote, and only those: nothing made up.
  const std::pair<const char*, int64_t> parts[] = {{"_min\":", f.min}, {"_max\":", f.max}, {"_sum\":", f.sum}};
  for (int i = 0; i < 3; ++i) {
    if (!(f.parts & (1u << i))) continue;
    j.raw(",\"");
    j.raw(key);
    j.raw(parts[i].first);
    j.i64(parts[i].second);
  }
}

// The fields of a record after "ph": pid, tid, ts, dur (us) and args.
void body(JsonOut& j, const PfwRecord& r, std::string_view file, bool chrome) {
  j.raw(",\"pid\":");
  j.i64(r.pid);
  j.raw(",\"tid\":");
  j.i64(r.tid);
  j.raw(",\"ts\":");
  j.i64(r.ts);
  if (r.ph != Phase::kCounter) {
    j.raw(",\"dur\":");
    j.i64(r.ph == Phase::kAggregated ? (r.args_dur.present ? r.args_dur.total(r.cnt) : 0) : r.dur);
  }
  if (chrome) j.raw(",\"args\":{\"layer\":");
  else j.raw(",\"layer\":");
  j.str(importer::event_type_name(r.type));
  if (!r.has_type) j.raw(",\"dftracer\":1");
  if (r.ph == Phase::kAggregated) {
    j.raw(",\"calls\":");
    j.i64(r.cnt);
  }
  if (!file.empty()) {
    j.raw(",\"path\":");
    j.str(file);
  }
  num(j, "fd", r.fd);
  num(j, "offset", r.offset);
  num(j, "count", r.count);
  num(j, "size", r.size);
  num(j, "ret", r.ret);
  num(j, "errno", r.err);
  num(j, "mem_align", r.mem_align);
  if (r.ph == Phase::kAggregated && r.args_dur.ranged) num(j, "dur", r.args_dur);
  if (chrome) j.ch('}');
}

}  // namespace

uint64_t write_json_lines_pfw(const std::string& trace, FILE* out) {
  FileSink sink(out);
  JsonOut j(sink);
  uint64_t n = 0;
  walk_pfw(trace, [&](const PfwRecord& r, std::string_view file) {
    j.raw("{\"name\":");
    j.str(r.name);
    j.raw(",\"cat\":");
    j.str(r.cat);
    j.raw(",\"ph\":\"");
    j.raw(r.ph == Phase::kAggregated ? "aggregated" : r.ph == Phase::kCounter ? "counter" : "complete");
    j.ch('"');
    body(j, r, file, false);
    j.raw("}\n");
    j.maybe_flush();
    ++n;
  }, [](const PfwRecord&, const auto&) {});
  j.flush();
  if (j.failed()) throw std::runtime_error("write failed (stdout)");
  return n;
}

uint64_t write_chrome_pfw(const std::string& trace, const std::string& out_path) {
  OutputFile out(out_path);
  uint64_t n = 0;
  {
    JsonOut j(out.sink());
    j.raw("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    // Named as strata's own traces are (chrome.cc): without a process_name
    // record Perfetto shows a bare pid. A pid with several start records
    // (an exec'ed program traced again) has one name per image.
    std::map<int64_t, std::vector<std::string>> names;
    std::set<int64_t> pids;  // of the events written
    walk_pfw(trace, [&](const PfwRecord& r, std::string_view file) {
      if (r.ph == Phase::kCounter) return;  // telemetry samples: not spans
      if (n) j.raw(",\n");
      j.raw("{\"name\":");
      j.str(r.name);
      j.raw(",\"cat\":");
      j.str(r.cat);
      j.raw(",\"ph\":\"X\"");
      body(j, r, file, true);
      j.ch('}');
      j.maybe_flush();
      pids.insert(r.pid);
      ++n;
    }, [&](const PfwRecord& r, const std::unordered_map<uint64_t, std::string>& strings) {
      // The command line (arguments joined by ';', as the analyzer reads it), else the executable.
      std::string command;
      if (auto it = strings.find(r.cmd_hash); it != strings.end()) {
        command = it->second;
        std::replace(command.begin(), command.end(), ';', ' ');
      } else if (auto ex = strings.find(r.exec_hash); ex != strings.end()) {
        command = ex->second;
      }
      if (!command.empty()) names[r.pid].push_back(reader::program_label(command));
    });
    for (int64_t pid : pids) {
      std::string name;
      for (const auto& im : names[pid]) name += (name.empty() ? "" : " -> ") + im;
      if (name.empty()) name = "pid " + std::to_string(pid);
      j.raw(n ? ",\n" : "");
      j.raw("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
      j.i64(pid);
      j.raw(",\"tid\":");
      j.i64(pid);
      j.raw(",\"args\":{\"name\":");
      j.str(name);
      j.raw("}}");
    }
    j.raw("\n]}\n");
    j.flush();
    if (j.failed()) throw std::runtime_error(out_path + ": write failed");
  }
  out.close();
  return n;
}

}  // namespace strata::convert
