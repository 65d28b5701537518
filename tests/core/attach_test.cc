// Tracing without the launcher (strata_start / strata_stop, src/runtime/attach.cc
// and got.cc): a C program that links libstrata, and one that dlopens it so its
// calls reach strata only through GOT rewriting. The same workload traced by
// `strata run` and by strata_start gives the same events on its files.
#include "harness.h"

namespace core_test {
namespace {

const std::string kLinked = ATTACH_LINKED_BIN;
const std::string kDlopen = ATTACH_DLOPEN_BIN;
const std::string kLib = STRATA_LIB_PATH;

struct Variant {
  const char* name;
  const std::string* bin;
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

RunResult run_attach(const std::string& bin, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {bin};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, 90, {"STRATA_LIB=" + kLib});
}

// Events on files under dir: count per function, and bytes per function
// (the ret of data calls).
struct Summary {
  std::map<std::string, int64_t> count, bytes;
};
Summary summarize(const std::vector<Event>& events, const std::string& dir) {
  Summary s;
  for (const Event& e : events) {
    if (!e.has_path || !under(e.path, dir)) continue;
    ++s.count[e.name];
    if (e.has_size && e.ret > 0) s.bytes[e.name] += e.ret;
  }
  return s;
}

class AttachTest : public ::testing::TestWithParam<Variant> {};

TEST_P(AttachTest, SameEventsAsStrataRun) {
  TempDir tmp;
  const std::string run_dir = tmp.mkdir("run"), attach_dir = tmp.mkdir("attach");
  RunResult launched = strata_run(tmp.sub("t-run"), {*GetParam().bin, "plain", run_dir});
  ASSERT_EQ(launched.code, 0) << launched.err;
  RunResult attached = run_attach(*GetParam().bin, {"attach", attach_dir, tmp.sub("t-attach")});
  ASSERT_EQ(attached.code, 0) << attached.err;

  Summary a = summarize(cat_trace(tmp.sub("t-run")), run_dir);
  Summary b = summarize(cat_trace(tmp.sub("t-attach")), attach_dir);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.bytes, b.bytes);
  // The workload's calls, exactly (attach.c: workload()).
  EXPECT_EQ(b.count["open"], 3);  // data.bin twice, child.txt
  EXPECT_EQ(b.count["write"], 5);  // 3 x 1000 data.bin, 2 child.txt
  EXPECT_EQ(b.bytes["write"], 4500);
  EXPECT_EQ(b.count["pwrite64"] + b.count["pwrite"], 1);
  EXPECT_EQ(b.count["read"], 3);
  EXPECT_EQ(b.bytes["read"], 3100);
  EXPECT_EQ(b.count["fopen"] + b.count["fopen64"], 2);
  EXPECT_EQ(b.count["fwrite"], 1);
  EXPECT_EQ(b.count["fread"], 1);
  EXPECT_EQ(b.count["rename"], 1);
  EXPECT_EQ(b.count["unlink"], 1);
  // Parent and forked child, both complete.
  auto files = process_files(tmp.sub("t-attach"));
  ASSERT_EQ(files.size(), 2u);
  for (auto& f : files) EXPECT_TRUE(f.footer) << f.file;
}

TEST_P(AttachTest, NothingBeforeStartOrAfterStop) {
  TempDir tmp;
  const std::string work = tmp.mkdir("w");
  RunResult r = run_attach(*GetParam().bin, {"attach", work, tmp.sub("t")});
  ASSERT_EQ(r.code, 0) << r.err;
  auto events = cat_trace(tmp.sub("t"));
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.path == work + "/before.txt"; }), 0);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.path == work + "/after.txt"; }), 0);
  EXPECT_EQ(count_if(events, [&](const Event& e) { return e.path == work + "/data.bin"; }), 12);
  // The files themselves are written in full.
  EXPECT_EQ(fs::file_size(work + "/before.txt"), 10u);
  EXPECT_EQ(fs::file_size(work + "/after.txt"), 20u);
}

TEST_P(AttachTest, ProgramBehavesAsWithoutTracing) {
  TempDir tmp;
  const std::string plain_dir = tmp.mkdir("plain"), attach_dir = tmp.mkdir("attach");
  RunResult plain = run_attach(*GetParam().bin, {"plain", plain_dir});
  RunResult attached = run_attach(*GetParam().bin, {"attach", attach_dir, tmp.sub("t")});
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(attached.code, 0) << attached.err;
  EXPECT_EQ(attached.out, "start 0\n" + plain.out + "stop 0\n");
  EXPECT_EQ(attached.err,
            "during: STRATA_DIR set, LD_PRELOAD has libstrata\n"
            "after: STRATA_DIR unset, LD_PRELOAD unset\n");
  for (const char* f : {"data.bin", "child.txt"})
    EXPECT_TRUE(read_text(attach_dir + "/" + f) == read_text(plain_dir + "/" + f)) << f;
  EXPECT_FALSE(fs::exists(attach_dir + "/stream.txt"));
}

TEST_P(AttachTest, StartStopStartGivesTwoTraces) {
  TempDir tmp;
  const std::string work = tmp.mkdir("w");
  RunResult r = run_attach(*GetParam().bin, {"twice", work, tmp.sub("t1"), tmp.sub("t2")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("start 0\n"), std::string::npos);
  Summary one = summarize(cat_trace(tmp.sub("t1")), work + "/one");
  Summary two = summarize(cat_trace(tmp.sub("t2")), work + "/two");
  EXPECT_EQ(one.count["write"], 5);
  EXPECT_EQ(one.count, two.count);
  EXPECT_EQ(one.bytes, two.bytes);
  EXPECT_TRUE(summarize(cat_trace(tmp.sub("t1")), work + "/two").count.empty());
  EXPECT_TRUE(summarize(cat_trace(tmp.sub("t2")), work + "/one").count.empty());
  for (const char* t : {"t1", "t2"}) {
    auto files = process_files(tmp.sub(t));
    ASSERT_EQ(files.size(), 2u) << t;
    for (auto& f : files) EXPECT_TRUE(f.footer) << f.file;
  }
}

TEST_P(AttachTest, MisuseReturnsErrors) {
  TempDir tmp;
  RunResult r = run_attach(*GetParam().bin, {"errors", tmp.path(), tmp.sub("t")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "stop before start -1 errno Invalid argument\n"
            "start empty -1 errno Invalid argument\n"
            "start 0\n"
            "start again -1 errno Device or resource busy\n"
            "stop 0\n"
            "stop again -1 errno Invalid argument\n");
}

TEST_P(AttachTest, InfoSaysAttached) {
  TempDir tmp;
  const std::string work = tmp.mkdir("w");
  ASSERT_EQ(run_attach(*GetParam().bin, {"attach", work, tmp.sub("t")}).code, 0);
  RunResult json = run({kStrata, "info", tmp.sub("t"), "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_NE(json.out.find("\"attached\":2"), std::string::npos) << json.out;
  RunResult text = run({kStrata, "info", tmp.sub("t")});
  EXPECT_NE(text.out.find("attached:       2 of 2 process(es)"), std::string::npos) << text.out;
  // A trace of `strata run` says nothing of the kind.
  ASSERT_EQ(strata_run(tmp.sub("r"), {*GetParam().bin, "plain", tmp.mkdir("w2")}).code, 0);
  EXPECT_NE(run({kStrata, "info", tmp.sub("r"), "--json"}).out.find("\"attached\":0"), std::string::npos);
}

TEST_P(AttachTest, GotEntryPatchedThenRestored) {
  TempDir tmp;
  RunResult r = run_attach(*GetParam().bin, {"got", tmp.path(), tmp.sub("t")});
  ASSERT_EQ(r.code, 0) << r.err;
  if (GetParam().bin == &kDlopen) {
    EXPECT_EQ(r.out, "during changed, after restored\nSIGTERM default: 1 1 1\nduring in libstrata\n");
  } else {
    // Linked with -lstrata, libstrata precedes libc: the executable's read
    // is libstrata's from the start (a pass-through until strata_start).
    EXPECT_EQ(r.out, "during same, after restored\nSIGTERM default: 1 1 1\nduring in libstrata\n");
  }
}

TEST_P(AttachTest, LibraryLoadedAfterStartIsPatchedInTheBaseNamespaceOnly) {
  TempDir tmp;
  RunResult r = run_attach(*GetParam().bin, {"dlmopen", tmp.path(), tmp.sub("t"), CTYPES_IO_LIB});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "base wrote 300\nnewlm wrote 300\n");
  auto events = cat_trace(tmp.sub("t"));
  auto on = [&](const char* f) { return select(events, [&](const Event& e) { return e.path == tmp.sub(f); }); };
  EXPECT_EQ(count_by_name(on("base.bin")), (std::map<std::string, int64_t>{{"close", 1}, {"open", 1}, {"write", 3}}));
  EXPECT_TRUE(on("newlm.bin").empty());
  EXPECT_EQ(fs::file_size(tmp.sub("newlm.bin")), 300u);
}

TEST_P(AttachTest, KilledBySigtermWhileAttachedLeavesACompleteTrace) {
  TempDir tmp;
  RunResult r = run_attach(*GetParam().bin, {"sigterm", tmp.path(), tmp.sub("t")});
  EXPECT_EQ(r.signal, SIGTERM);
  auto files = process_files(tmp.sub("t"));
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(files[0].footer);
  auto events = cat_trace(tmp.sub("t"));
  auto writes = select(events, [&](const Event& e) { return e.name == "write" && e.path == tmp.sub("last.txt"); });
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].ret + writes[1].ret, 1234);
  EXPECT_EQ(count_if(events, [](const Event& e) { return e.name == "signal" && e.ret == SIGTERM; }), 1);
}

INSTANTIATE_TEST_SUITE_P(Programs, AttachTest,
                         ::testing::Values(Variant{"linked", &kLinked}, Variant{"dlopen", &kDlopen}),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace core_test
