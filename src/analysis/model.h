// The analyzer's internal event model, independent of where events come from
// (strata traces, DFTracer .pfw files). Sources stream IoEvents one at a time
// together with the id tables they refer to; nothing materialises a trace.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/counters.h"

namespace strata::analysis {

enum class Layer : uint8_t { kPosix = 0, kStdio = 1, kProc = 2, kApp = 3 };
const char* layer_name(Layer l);

// Classification of a function (event name + category), computed once per id.
struct FuncInfo {
  std::string name;
  std::string category;
  Layer layer = Layer::kApp;
  counters::Op op = counters::Op::kNone;
  bool positional = false;  // pread/pwrite family: offset column is the access offset
  bool data = false;        // a read or write (else metadata, for I/O layers)
  bool is_read = false;
  bool is_write = false;
  // fsync/fdatasync: data time (Darshan adds it to POSIX_F_WRITE_TIME), not
  // metadata, though it moves no bytes and is not a write.
  bool is_sync = false;
  bool is_compute = false;  // app region counted as compute
  bool is_loader_wait = false;  // app event "dataloader.next": the training loop waiting for a batch
  bool is_loader_start = false; // app event "dataloader.iter": starting an iterator (and its workers)
  bool is_loader_pass = false;  // app event "dataloader.epoch": one whole pass over a loader
  bool is_loader_stop = false;  // app event "dataloader.stop": the call that ended a pass (worker shutdown)
  bool is_fork = false;     // fork/clone: ret is the child pid
  // How a process ends: kExit (exit, _exit, _Exit, main's return: ret is the
  // status) or kSignal (the runtime's handler saw a fatal signal: ret is its
  // number).
  enum class End : uint8_t { kNone, kExit, kSignal };
  End ends_process = End::kNone;
  bool items_ret = false;   // fread/fwrite: ret counts items, not bytes (DFTracer)
};
FuncInfo classify(std::string_view name, std::string_view category);

// Views into the unit's source (its reader's dictionary) or the CtxTable's
// own text: valid while the unit's Tables live (UnitConsumer::begin to end);
// copy what must outlive them.
struct CtxTag {
  std::string_view key;
  std::string_view value;  // printable value (ints formatted)
  bool is_int = true;
  int64_t int_value = 0;
};

// The tags of every context id of a unit in one array: traces tagged per
// step hold a context per few events, so no allocation per context.
class CtxTable {
 public:
  size_t size() const { return start_.size(); }
  bool empty() const { return start_.empty(); }
  std::span<const CtxTag> operator[](size_t id) const {
    const size_t end = id + 1 < start_.size() ? start_[id + 1] : tags_.size();
    return {tags_.data() + start_[id], end - start_[id]};
  }
  // Appends the next id with these tags.
  void push_back(std::vector<CtxTag> tags) {
    begin_next();
    for (CtxTag& t : tags) tags_.push_back(std::move(t));
  }
  void emplace_back() { begin_next(); }
  // Forgets every id (keep()'s text stays valid).
  void clear() {
    tags_.clear();
    start_.clear();
  }
  // Or in place: begin_next(), then add_tag() for each of its tags.
  void begin_next() { start_.push_back(static_cast<uint32_t>(tags_.size())); }
  CtxTag& add_tag() { return tags_.emplace_back(); }
  // A copy of s held by the table (chunks that never move), for tag text the
  // source does not keep (formatted ints).
  std::string_view keep(std::string_view s) {
    if (s.size() > text_left_) {
      const size_t size = std::max<size_t>(s.size(), 16u << 10);
      text_.push_back(std::make_unique_for_overwrite<char[]>(size));
      text_next_ = text_.back().get();
      text_left_ = size;
    }
    char* p = text_next_;
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    text_next_ += s.size();
    text_left_ -= s.size();
    return {p, s.size()};
  }
  // Room for `more` ids and `more_tags` tags beyond the current ones, growing
  // geometrically (a unit's dictionary arrives in many blocks): growing the
  // tag array tag by tag moved every tag's strings each time.
  void reserve_more(size_t more, size_t more_tags) {
    auto grow = [](auto& v, size_t need) {
      if (need > v.capacity()) v.reserve(std::max(need, 2 * v.capacity()));
    };
    grow(start_, start_.size() + more);
    grow(tags_, tags_.size() + more_tags);
  }

 private:
  std::vector<CtxTag> tags_;
  std::vector<uint32_t> start_;  // per id: its first tag in tags_
  std::vector<std::unique_ptr<char[]>> text_;  // keep()'s copies
  char* text_next_ = nullptr;
  size_t text_left_ = 0;
};

// Id tables of one input unit. Sources keep funcs and ctxs complete for every
// id an event they deliver uses; str resolves string ids (paths).
struct Tables {
  std::vector<FuncInfo> funcs;
  CtxTable ctxs;  // index 0: no tags
  std::function<std::string_view(uint32_t)> str;
  // When set, holding it keeps the views str() returns valid past the unit
  // (what a unit keeps of its paths is then not copied); else copy them.
  std::shared_ptr<const void> str_storage;
};

// The size a per-context cache grows to on meeting context `ctx`: the whole
// table at once, not one id at a time (t may be null between units).
inline size_t ctx_slots(const Tables* t, uint32_t ctx) {
  const size_t table = t ? t->ctxs.size() : 0;
  return ctx + size_t{1} > table ? ctx + size_t{1} : table;
}

// One event, times in ns since the trace start.
struct IoEvent {
  int64_t pid = 0;
  int64_t tid = 0;
  int64_t ts = 0;
  int64_t dur = 0;
  int64_t offset = -1;
  int64_t size = -1;  // bytes requested, -1 unknown
  int64_t ret = 0;
  uint32_t func = 0;
  uint32_t path = 0;  // string id, 0 = none
  uint32_t ctx = 0;
  int32_t fd = -1;
  int32_t err = 0;
  uint8_t mem_align = 0;  // buffer alignment, format::Column::kMemAlign (0 unknown)
  bool has_ret = true;  // false when the source does not know the return value
};

struct ProcessMeta {
  int64_t pid = 0;
  int64_t ppid = 0;
  int64_t rank = -1;
  std::string host;
  std::string exe;
  std::string cmdline;
  int64_t start_ns = -1;  // trace time of the process start, -1 unknown
  std::string source_file;
};

// Receives one input unit (a strata file or a .pfw file) as a stream.
class UnitConsumer {
 public:
  virtual ~UnitConsumer() = default;
  // Called once before events; `sizes_known` is false when the input carries
  // no sizes/offsets (DFTracer without arguments).
  virtual void begin(const std::string& unit, const Tables* tables, bool sizes_known) = 0;
  // Process metadata; may be called more than once per unit (pfw files hold
  // forked children), before or between events.
  virtual void process(const ProcessMeta& meta) = 0;
  virtual void event(const IoEvent& e) = 0;
  // A run of consecutive events, in order: sources hand events over in
  // batches so that a consumer pays one virtual call per batch, not per
  // event (hot consumers override this with a loop over their own event()).
  // Sources deliver every pending batch before any other call.
  virtual void events(std::span<const IoEvent> batch) {
    for (const IoEvent& e : batch) event(e);
  }
  // Counters a profile-mode process recorded itself (records keyed by path id).
  virtual void profile(int64_t /*pid*/, const std::vector<counters::PosixRecord>& /*posix*/,
                       const std::vector<counters::StdioRecord>& /*stdio*/) {}
  // A problem worth reporting that does not stop the analysis (e.g. a file
  // cut short by a killed writer, read up to its last complete block).
  virtual void warning(const std::string& /*what*/) {}
  // A figure (sizes, offsets, quantiles, timeline) that the input knows only
  // approximately (DFTracer aggregated records: only min/max/sum per field).
  virtual void approximate(const std::string& /*figure*/) {}
  // The source is about to change what the Tables given to begin() reach
  // (a DICT block grows the dictionary, and the tables after it): a consumer
  // that runs passes on other threads waits for them here.
  virtual void sync_point() {}
  virtual void end() = 0;
};

// An input: a list of units readable independently (in parallel).
class Source {
 public:
  virtual ~Source() = default;
  virtual const std::vector<std::string>& units() const = 0;
  // Streams unit i into c. Throws InputError on malformed input.
  virtual void read_unit(size_t i, UnitConsumer& c) = 0;
  virtual const char* kind() const = 0;
  // The threads the whole analysis may use (-j). A source may spend those
  // that units leave idle (fewer units than threads) inside a unit.
  virtual void set_threads(unsigned threads) { (void)threads; }
  // The threads each unit's passes may run on (FanOut): more than one when
  // units leave threads idle.
  virtual unsigned unit_threads() const { return 1; }
};

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace strata::analysis
