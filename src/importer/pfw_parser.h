// Stage 3 of the importer: one DFTracer line into a neutral record. Reads
// DFTracer 1.x (JSON array, "ph" letters) and 2.x (JSON lines, integer "ph",
// integer "type" layer, hex-string hashes, aggregated records).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "importer/line_reader.h"

namespace strata::importer {

// Unescapes a JSON string's content (p just after its opening quote, up to the
// closing quote, never past end) into out. \udc80..\udcff alone decode to the
// raw bytes 0x80..0xff (surrogateescape). Returns nullptr, or what is wrong.
const char* unescape_json_string(const char* p, const char* end, std::string& out);

// Record phases, DFTracer 2.x numbering (1.x letters X, C, M map onto them).
enum class Phase : uint8_t { kUnknown = 0, kComplete = 1, kCounter = 2, kAggregated = 3, kMetadata = 4 };
const char* phase_name(Phase p);

// The "type" column (DFTracer 2.x): the layer that wrote the event.
// Append-only numbering; values strata does not know read as kUnknown.
enum class EventType : uint8_t {
  kUnknown = 0, kDftracer = 1, kCApp = 2, kLibcIo = 3, kHip = 4, kHdf5 = 5, kPython = 6,
  kPsutil = 7, kFinstrument = 8, kCppApp = 9, kMpi = 10, kCuda = 11,
};
inline constexpr int kMaxEventType = 11;
const char* event_type_name(EventType t);
EventType event_type_of(int64_t v);

// A numeric argument: plain (one value), or for aggregated records ranged
// (min/max/sum over the folded calls).
struct NumField {
  bool present = false;
  bool ranged = false;
  int64_t v = 0;  // plain value
  int64_t min = 0, max = 0, sum = 0;
  uint8_t parts = 0;  // which of _min (1), _max (2), _sum (4) the record wrote
  // Total over n calls (exact when plain or ranged).
  int64_t total(int64_t n) const { return ranged ? sum : v * n; }
};

// An event's tag: an `args` key DFTracer's schema does not define (strata's
// own .pfw writes its context tags there: epoch, step, worker...; DLIO writes
// epoch, step, image_idx), with an integer or string value.
struct PfwTag {
  std::string key, value;  // value: the integer formatted, or the string
  bool is_int = false;
  int64_t int_value = 0;
};

struct PfwRecord {
  int version = 1;                 // 2: integer "ph" (DFTracer 2.x)
  Phase ph = Phase::kUnknown;
  EventType type = EventType::kUnknown;
  bool has_type = false;
  int64_t raw_type = -1;           // the value as written (-1 absent)
  std::string_view name, cat;      // unescaped
  int64_t pid = 0, tid = 0;
  bool has_ts = false;
  int64_t ts = 0;                  // us
  int64_t dur = 0;                 // us (complete events; aggregated: see args_dur)
  bool has_args = false;
  int64_t cnt = 1;                 // calls this record stands for (args.dft_cnt)
  NumField ret, count, size, offset, fd, err, args_dur;
  NumField mem_align;              // strata's own .pfw: buffer alignment in bytes
  int64_t ppid = -1;
  bool has_fhash = false;
  uint64_t fhash = 0, hhash = 0, cmd_hash = 0, exec_hash = 0;
  bool has_value = false;          // metadata "value" as a number or hex hash
  uint64_t value = 0;
  std::string_view value_str;      // metadata "value" as a string
  std::string_view a_name, a_fname;
  int64_t num_events = -1;         // "end" record
  int64_t approx_fields = 0;       // number of ranged fields
  std::span<const PfwTag> tags;    // valid until the next parse()
};

class PfwParser {
 public:
  explicit PfwParser(std::string path);
  ~PfwParser();
  // Parses one line; false when the line holds no record ("[", "]", blank).
  // Throws ImportError naming the file and line on malformed input. Strings
  // in rec stay valid until the next call.
  bool parse(const Line& line, PfwRecord& rec);
  // True once the first record line was seen; whether it started with "[".
  bool saw_anything() const { return saw_anything_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_;
  bool saw_anything_ = false;
};

// A hash written as a number or as a (hex) string. False if neither.
bool parse_hash_string(std::string_view s, uint64_t& out);

}  // namespace strata::importer
