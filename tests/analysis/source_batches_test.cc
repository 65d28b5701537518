// How the strata source hands events to the passes (issue 9 §5): in batches
// of at most StrataSource::kBatch consecutive events (UnitConsumer::events),
// every event exactly once, the threads of a process merged in end-time
// order. Real programs traced by the real `strata run`; the expected events
// are read back independently with the reader library.
#include <map>
#include <span>

#include "analysis/open_source.h"
#include "analysis/strata_source.h"
#include "e2e_harness.h"
#include "format/format.h"
#include "strata/reader.h"

namespace {

using namespace e2e;
using strata::analysis::IoEvent;
using strata::analysis::ProcessMeta;
using strata::analysis::StrataSource;
using strata::analysis::Tables;

// Records what a pass would see: the events, the batch sizes, and whether
// anything arrived out of the begin/process/events/end order.
class Recorder : public strata::analysis::UnitConsumer {
 public:
  void begin(const std::string&, const Tables* t, bool) override {
    tables = t;
    began = true;
  }
  void process(const ProcessMeta&) override {
    if (!batches.empty()) misordered = true;
  }
  void event(const IoEvent&) override { ++single_calls; }
  void events(std::span<const IoEvent> batch) override {
    if (!began || ended) misordered = true;
    batches.push_back(batch.size());
    for (const IoEvent& e : batch) {
      seen.push_back(e);
      if (tables) names.push_back(tables->funcs.at(e.func).name);
    }
  }
  void end() override { ended = true; }

  const Tables* tables = nullptr;
  bool began = false, ended = false, misordered = false;
  size_t single_calls = 0;
  std::vector<size_t> batches;
  std::vector<IoEvent> seen;
  std::vector<std::string> names;
};

// Events per thread of the trace's one file, read with the reader library
// (what the analyzer must deliver: every event but counters and begin/end marks).
std::map<uint32_t, size_t> reader_events_per_thread(const std::string& file) {
  strata::reader::FileReader r(file);
  strata::reader::EventBatch b;
  std::map<uint32_t, size_t> per_thread;
  while (r.next(b))
    for (size_t i = 0; i < b.size_events(); ++i) {
      const auto kind = static_cast<strata::format::EventKind>(r.dict().name(b.name[i]).kind);
      if (kind != strata::format::EventKind::kCounter && kind != strata::format::EventKind::kBegin &&
          kind != strata::format::EventKind::kEnd)
        ++per_thread[b.tid];
    }
  return per_thread;
}

Recorder read_only_unit(const std::string& trace, std::string* file) {
  StrataSource src(trace);
  EXPECT_EQ(src.units().size(), 1u);
  Recorder rec;
  src.read_unit(0, rec);
  *file = src.units().at(0);
  return rec;
}

TEST(SourceBatches, ReadsArriveInFullBatchesInCallOrder) {
  TempDir dir;
  const std::string data = dir.path() + "/data.bin";
  make_file(data, 1000 * 4096);
  const std::string trace = dir.path() + "/trace";
  const RunResult r = trace_workload(trace, {"seq", data, "1000"});
  ASSERT_EQ(r.code, 0) << describe(r);

  std::string file;
  const Recorder rec = read_only_unit(trace, &file);
  EXPECT_TRUE(rec.ended);
  EXPECT_FALSE(rec.misordered);
  EXPECT_EQ(rec.single_calls, 0u);  // the strata source only calls events()
  const auto expected = reader_events_per_thread(file);
  ASSERT_EQ(expected.size(), 1u);
  const size_t total = expected.begin()->second;
  ASSERT_EQ(rec.seen.size(), total);
  // Every batch full but the last.
  ASSERT_EQ(rec.batches.size(), (total + StrataSource::kBatch - 1) / StrataSource::kBatch);
  for (size_t i = 0; i + 1 < rec.batches.size(); ++i) EXPECT_EQ(rec.batches[i], StrataSource::kBatch) << i;
  EXPECT_EQ(rec.batches.back(), total - (rec.batches.size() - 1) * StrataSource::kBatch);
  // The workload's 1000 reads, in call order: 4096 bytes each at offsets 0, 4096, ...
  std::vector<int64_t> offsets;
  for (size_t i = 0; i < rec.seen.size(); ++i)
    if (rec.names[i] == "read") {
      EXPECT_EQ(rec.seen[i].ret, 4096);
      offsets.push_back(rec.seen[i].offset);
    }
  ASSERT_EQ(offsets.size(), 1000u);
  for (size_t i = 0; i < offsets.size(); ++i) ASSERT_EQ(offsets[i], static_cast<int64_t>(i) * 4096) << i;
}

TEST(SourceBatches, ThreadsMergeInEndTimeOrder) {
  TempDir dir;
  const std::string trace = dir.path() + "/trace";
  const RunResult r = trace_workload(trace, {"overlap", dir.path() + "/fifo"});
  ASSERT_EQ(r.code, 0) << describe(r);

  std::string file;
  const Recorder rec = read_only_unit(trace, &file);
  EXPECT_FALSE(rec.misordered);
  const auto expected = reader_events_per_thread(file);
  ASSERT_EQ(expected.size(), 3u);  // main (writes), reader (3 reads), compute (a region)
  std::map<uint32_t, size_t> got;
  for (const IoEvent& e : rec.seen) ++got[static_cast<uint32_t>(e.tid)];
  EXPECT_EQ(got, expected);
  for (size_t i = 1; i < rec.seen.size(); ++i)
    EXPECT_LE(rec.seen[i - 1].ts + rec.seen[i - 1].dur, rec.seen[i].ts + rec.seen[i].dur) << "event " << i;
  size_t reads = 0, writes = 0;
  for (const std::string& n : rec.names) {
    reads += n == "read";
    writes += n == "write";
  }
  EXPECT_EQ(reads, 3u);
  EXPECT_EQ(writes, 3u);
}

}  // namespace
