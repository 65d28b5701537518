// One large process file decoded on several threads (issue 9 §5,
// reader::ReadOptions::decode_threads): the batches, the dictionary as each
// batch comes out, the errors with their block numbers, and the output of
// `strata cat`, `info` and `analyze --json` are the same as reading the file
// block after block on one thread. The trace is a real program's: two
// threads, ~300,000 events, new paths all along (DICT blocks between the
// EVENTS blocks).
#include <array>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "format/format.h"
#include "harness.h"

using namespace core_test;

namespace {

namespace fmt = strata::format;
using strata::reader::EventBatch;
using strata::reader::FileReader;
using strata::reader::FormatError;
using strata::reader::ReadOptions;

constexpr long kSteps = 150000;  // per thread of the program
constexpr int64_t kPreads = 2 * (kSteps - (kSteps + 99) / 100);
constexpr int64_t kFilesCreated = 2 * ((kSteps + 99) / 100);

std::string read_bytes(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_bytes(const std::string& p, const std::string& d) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(d.data(), static_cast<std::streamsize>(d.size()));
}

struct Block {
  long index;  // 1-based, as FormatError numbers blocks
  size_t offset;
  fmt::BlockHeader h;
  fmt::BlockType type() const { return static_cast<fmt::BlockType>(h.type); }
  size_t end() const { return offset + sizeof h + h.stored_size; }
};
std::vector<Block> blocks_of(const std::string& d) {
  std::vector<Block> v;
  size_t pos = sizeof(fmt::FileHeader);
  while (pos + sizeof(fmt::BlockHeader) <= d.size()) {
    Block b{static_cast<long>(v.size()) + 1, pos, {}};
    std::memcpy(&b.h, d.data() + pos, sizeof b.h);
    v.push_back(b);
    pos = b.end();
  }
  return v;
}

// Everything a FileReader hands out, as comparable values.
struct Readout {
  std::vector<std::string> batches;                // tid and every column, byte for byte
  std::vector<std::array<size_t, 3>> dict_sizes;   // names, strings, contexts as each batch came out
  int64_t events = 0, preads_of_data = 0, files_created = 0;
  uint64_t dropped = 0;
  bool footer = false, truncated = false;
  long blocks = 0;
  std::string error;  // FormatError::what(), and what a second next() said
  long error_block = -1;
};

template <class T>
void append_column(std::string& s, const strata::reader::EventColumn<T>& v) {
  s.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
std::string columns_of(const EventBatch& b) {
  std::string s(reinterpret_cast<const char*>(&b.tid), sizeof b.tid);
  append_column(s, b.name);
  append_column(s, b.path);
  append_column(s, b.ctx);
  append_column(s, b.fd);
  append_column(s, b.err);
  append_column(s, b.ts);
  append_column(s, b.dur);
  append_column(s, b.offset);
  append_column(s, b.size);
  append_column(s, b.ret);
  append_column(s, b.mem_align);
  return s;
}

Readout read_all(const std::string& file, unsigned decode_threads, const std::string& data_path) {
  Readout r;
  ReadOptions options;
  options.decode_threads = decode_threads;
  FileReader fr(file, options);
  EventBatch b;
  try {
    while (fr.next(b)) {
      r.batches.push_back(columns_of(b));
      const auto& d = fr.dict();
      r.dict_sizes.push_back({d.num_names(), d.num_strings(), d.num_contexts()});
      r.events += static_cast<int64_t>(b.size_events());
      for (size_t i = 0; i < b.size_events(); ++i) {
        const std::string& name = d.name(b.name[i]).name;
        std::string_view path = d.str(b.path[i]);
        if (name.rfind("pread", 0) == 0 && path == data_path) ++r.preads_of_data;
        if (name.rfind("open", 0) == 0 && path.find("/work/t") != std::string::npos && b.fd[i] >= 0) ++r.files_created;
      }
    }
  } catch (const FormatError& e) {
    r.error = e.what();
    r.error_block = e.block();
    try {
      fr.next(b);
      r.error += " | then next() returned";
    } catch (const FormatError& again) {
      r.error += std::string(" | then: ") + again.what();
    }
  }
  r.footer = fr.has_footer();
  r.truncated = fr.truncated();
  r.blocks = fr.blocks_read();
  r.dropped = fr.stats().events_dropped;
  return r;
}

void expect_same(const Readout& in_turn, const Readout& ahead) {
  EXPECT_EQ(in_turn.batches.size(), ahead.batches.size());
  EXPECT_TRUE(in_turn.batches == ahead.batches) << "batches differ";
  EXPECT_TRUE(in_turn.dict_sizes == ahead.dict_sizes) << "dictionary sizes differ";
  EXPECT_EQ(in_turn.events, ahead.events);
  EXPECT_EQ(in_turn.preads_of_data, ahead.preads_of_data);
  EXPECT_EQ(in_turn.files_created, ahead.files_created);
  EXPECT_EQ(in_turn.dropped, ahead.dropped);
  EXPECT_EQ(in_turn.footer, ahead.footer);
  EXPECT_EQ(in_turn.truncated, ahead.truncated);
  EXPECT_EQ(in_turn.blocks, ahead.blocks);
  EXPECT_EQ(in_turn.error, ahead.error);
  EXPECT_EQ(in_turn.error_block, ahead.error_block);
}

// The traced program, run once for the whole suite.
struct Traced {
  TempDir tmp;
  std::string trace, file, data, bytes;
  std::vector<Block> blocks;
  RunResult program;
  Traced() {
    trace = tmp.sub("trace");
    const std::string work = tmp.mkdir("work");
    data = work + "/data";
    program = strata_run(trace, {MANY_BLOCKS_BIN, work, std::to_string(kSteps)}, {}, 120);
    for (auto& e : fs::directory_iterator(trace))
      if (e.path().extension() == ".strata") file = e.path().string();
    bytes = read_bytes(file);
    blocks = blocks_of(bytes);
  }
  // The `nth` block of `type` counted from the middle of the file, that is
  // directly followed by an EVENTS block.
  const Block& middle(fmt::BlockType type) const {
    for (size_t i = blocks.size() / 2; i + 1 < blocks.size(); ++i)
      if (blocks[i].type() == type && blocks[i + 1].type() == fmt::BlockType::kEvents) return blocks[i];
    throw std::runtime_error("no such block in the second half of the file");
  }
  std::string variant(const std::string& name, const std::string& d) const {
    const std::string p = tmp.sub(name + ".strata");
    write_bytes(p, d);
    return p;
  }
};

class ParallelDecode : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { traced_ = new Traced(); }
  static void TearDownTestSuite() {
    delete traced_;
    traced_ = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(traced_->program.code, 0) << traced_->program.err;
    ASSERT_FALSE(traced_->file.empty());
  }
  // Reads `file` in turn and with 1, 2 and 3 decode threads; returns the in-turn readout.
  static Readout read_every_way(const std::string& file) {
    Readout in_turn = read_all(file, 0, traced_->data);
    for (unsigned threads : {1u, 2u, 3u}) {
      SCOPED_TRACE("decode_threads " + std::to_string(threads));
      expect_same(in_turn, read_all(file, threads, traced_->data));
    }
    return in_turn;
  }
  static Traced* traced_;
};
Traced* ParallelDecode::traced_ = nullptr;

TEST_F(ParallelDecode, SameBatchesAndDictionaryOnAMultiBlockFile) {
  const Traced& t = *traced_;
  EXPECT_EQ(t.program.out, "preads=" + std::to_string(kPreads) + " files=" + std::to_string(kFilesCreated) + "\n");
  // Large enough to be read ahead, with dictionary blocks between EVENTS blocks.
  ASSERT_GE(t.bytes.size(), strata::reader::kDecodeAheadMinBytes);
  size_t events_blocks = 0, dicts_between = 0;
  for (const Block& b : t.blocks) {
    if (b.type() == fmt::BlockType::kEvents) ++events_blocks;
    if (b.type() == fmt::BlockType::kDict && events_blocks > 0) ++dicts_between;
  }
  EXPECT_GE(events_blocks, 8u);
  // How many the writer makes depends on how often it wakes (3 in an ASan
  // build on a loaded machine, 4-6 here); the tests below need one in the
  // second half, and a 4 MiB ring per thread drains at least twice.
  EXPECT_GE(dicts_between, 2u);

  Readout r = read_every_way(t.file);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.footer);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.blocks, static_cast<long>(t.blocks.size()));
  ASSERT_EQ(r.dropped, 0u) << "the writer fell behind: counts below are not exact";
  EXPECT_EQ(r.preads_of_data, kPreads);
  EXPECT_EQ(r.files_created, kFilesCreated);
}

// Dictionary::string_storage keeps the strings' views valid after the
// reader is gone (the analysis keeps a unit's paths that way, uncopied):
// every string of a multi-block file reads the same after the reader's
// destructor ran (an ASan build reports any read of freed memory).
TEST_F(ParallelDecode, StringStorageOutlivesTheReader) {
  std::vector<std::string> copies;
  std::vector<std::string_view> views;
  std::shared_ptr<const void> storage;
  {
    FileReader fr(traced_->file);
    EventBatch b;
    while (fr.next(b)) {
    }
    const auto& d = fr.dict();
    for (uint32_t id = 1; id < d.num_strings(); ++id) {
      copies.emplace_back(d.str(id));
      views.push_back(d.str(id));
    }
    storage = d.string_storage();
  }
  ASSERT_GT(views.size(), 10u);
  size_t data_paths = 0;
  for (size_t i = 0; i < views.size(); ++i) {
    ASSERT_EQ(views[i], copies[i]) << "string id " << i + 1;
    data_paths += views[i] == traced_->data;
  }
  EXPECT_EQ(data_paths, 1u);
}

TEST_F(ParallelDecode, CorruptEventsBlockInTheMiddleIsReportedAtItsBlock) {
  const Traced& t = *traced_;
  const Block& bad = t.middle(fmt::BlockType::kEvents);
  std::string d = t.bytes;
  d[bad.offset + sizeof(fmt::BlockHeader) + bad.h.stored_size / 2] ^= 0x5a;
  const std::string file = t.variant("corrupt-events", d);
  const std::string what = file + ": block " + std::to_string(bad.index) + " at offset " + std::to_string(bad.offset) +
                           ": payload checksum mismatch (corrupt block)";

  Readout r = read_every_way(file);
  EXPECT_EQ(r.error, what + " | then: " + what);
  EXPECT_EQ(r.error_block, bad.index);
  size_t before = 0;  // EVENTS blocks before the corrupt one: all handed out
  for (const Block& b : t.blocks) before += b.index < bad.index && b.type() == fmt::BlockType::kEvents;
  EXPECT_EQ(r.batches.size(), before);
}

TEST_F(ParallelDecode, BadDictHeaderInTheMiddleIsReportedAtItsBlock) {
  const Traced& t = *traced_;
  const Block& bad = t.middle(fmt::BlockType::kDict);
  std::string d = t.bytes;
  d[bad.offset] ^= 0x01;  // magic
  const std::string file = t.variant("bad-dict-magic", d);
  Readout r = read_every_way(file);
  EXPECT_EQ(r.error_block, bad.index);
  EXPECT_EQ(r.error.substr(0, r.error.find(" | ")), file + ": block " + std::to_string(bad.index) + " at offset " +
                                                        std::to_string(bad.offset) + ": bad block magic (corrupt file)");
}

// A DICT block emptied (valid checksums): a later EVENTS block uses ids it
// never defined. Later DICT blocks define larger ids, so the reader must see
// the gap, not just compare with the largest id (this failed in ~1 run of 10,
// when the next EVENTS block was the other thread's). That check needs the dictionary as of the block, which
// the decode threads never see: the reader makes it in file order.
TEST_F(ParallelDecode, UndefinedIdAfterAnEmptiedDictBlockIsReportedAtTheEventsBlock) {
  const Traced& t = *traced_;
  const Block& dict = t.middle(fmt::BlockType::kDict);
  fmt::BlockHeader h{};
  h.magic = fmt::kBlockMagic;
  h.type = static_cast<uint8_t>(fmt::BlockType::kDict);
  h.codec = static_cast<uint8_t>(fmt::Codec::kNone);
  h.header_hash = fmt::header_hash_of(h);
  h.payload_hash = XXH3_64bits("", 0);
  std::string d = t.bytes.substr(0, dict.offset) + std::string(reinterpret_cast<const char*>(&h), sizeof h) +
                  t.bytes.substr(dict.end());
  const std::string file = t.variant("emptied-dict", d);
  Readout r = read_every_way(file);
  ASSERT_GT(r.error_block, dict.index) << r.error;
  const std::vector<Block> now = blocks_of(d);
  const Block& at = now[r.error_block - 1];
  EXPECT_EQ(at.type(), fmt::BlockType::kEvents);
  EXPECT_NE(r.error.find(file + ": block " + std::to_string(at.index) + " at offset " + std::to_string(at.offset) +
                         ": EVENTS block: event "),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find(", not defined by an earlier DICT block (corrupt block)"), std::string::npos) << r.error;
}

TEST_F(ParallelDecode, FileCutInsideABlockReadsUpToIt) {
  const Traced& t = *traced_;
  const Block& cut = t.middle(fmt::BlockType::kEvents);
  const std::string file = t.variant("cut", t.bytes.substr(0, cut.offset + sizeof(fmt::BlockHeader) + cut.h.stored_size / 2));
  Readout r = read_every_way(file);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.footer);
  EXPECT_EQ(r.blocks, cut.index);
  size_t before = 0;
  for (const Block& b : t.blocks) before += b.index < cut.index && b.type() == fmt::BlockType::kEvents;
  EXPECT_EQ(r.batches.size(), before);
}

// The commands: `-j 1` reads in turn, more threads read ahead.
TEST_F(ParallelDecode, CatInfoAndAnalyzePrintTheSameWithAndWithoutDecodeThreads) {
  const Traced& t = *traced_;
  RunResult cat1 = run({kStrata, "cat", "-j", "1", t.trace}, 120);
  ASSERT_EQ(cat1.code, 0) << cat1.err;
  const int64_t lines = std::count(cat1.out.begin(), cat1.out.end(), '\n');
  EXPECT_EQ(lines, info_trace(t.trace).events);
  EXPECT_GT(lines, kPreads);
  for (const char* j : {"2", "3"}) {
    SCOPED_TRACE(std::string("-j ") + j);
    RunResult cat = run({kStrata, "cat", "-j", j, t.trace}, 120);
    EXPECT_EQ(cat.code, 0) << cat.err;
    EXPECT_TRUE(cat.out == cat1.out) << "strata cat output differs";
  }
  RunResult info1 = run({kStrata, "info", "--json", "-j", "1", t.trace}, 120);
  RunResult info3 = run({kStrata, "info", "--json", "-j", "3", t.trace}, 120);
  EXPECT_EQ(info1.code, 0) << info1.err;
  EXPECT_EQ(info1.out, info3.out);
  RunResult an1 = run({kStrata, "analyze", "--json", "-j", "1", t.trace}, 120);
  ASSERT_EQ(an1.code, 0) << an1.err;
  EXPECT_NE(an1.out.find("\"events\": "), std::string::npos);
  for (const char* j : {"2", "4"}) {
    SCOPED_TRACE(std::string("-j ") + j);
    RunResult an = run({kStrata, "analyze", "--json", "-j", j, t.trace}, 120);
    EXPECT_EQ(an.code, 0) << an.err;
    EXPECT_TRUE(an.out == an1.out) << "analyze --json differs";
  }
}

TEST_F(ParallelDecode, CommandsReportACorruptBlockTheSameWithDecodeThreads) {
  const Traced& t = *traced_;
  const Block& bad = t.middle(fmt::BlockType::kEvents);
  std::string d = t.bytes;
  d[bad.offset + sizeof(fmt::BlockHeader) + bad.h.stored_size / 2] ^= 0x5a;
  const std::string file = t.variant("corrupt-cli", d);
  const std::string what = file + ": block " + std::to_string(bad.index) + " at offset " + std::to_string(bad.offset) +
                           ": payload checksum mismatch (corrupt block)";
  RunResult cat1 = run({kStrata, "cat", "-j", "1", file}, 120);
  RunResult cat3 = run({kStrata, "cat", "-j", "3", file}, 120);
  EXPECT_EQ(cat1.code, 2);
  EXPECT_NE(cat1.err.find(what), std::string::npos) << cat1.err;
  EXPECT_GT(cat1.out.size(), 0u);
  EXPECT_EQ(cat3.code, cat1.code);
  EXPECT_EQ(cat3.err, cat1.err);
  EXPECT_TRUE(cat3.out == cat1.out) << "events before the corrupt block differ";
  RunResult an1 = run({kStrata, "analyze", "--json", "-j", "1", file}, 120);
  RunResult an2 = run({kStrata, "analyze", "--json", "-j", "2", file}, 120);
  EXPECT_EQ(an1.code, 1);
  EXPECT_NE(an1.err.find(what), std::string::npos) << an1.err;
  EXPECT_EQ(an2.code, an1.code);
  EXPECT_EQ(an2.err, an1.err);
}

}  // namespace
