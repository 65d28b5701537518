// The "structure" pass (the event flow graph as an analysis pass): its
// section in `strata analyze` text and JSON, and its state saved, merged and
// loaded the way strata.dask ships it, giving the same report byte for byte.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "analysis/analyze.h"
#include "analysis/pass.h"

using namespace strata::analysis;

namespace {

const std::string kSamples = STRATA_SAMPLES_DIR;

std::string report(const AnalyzeOptions& o, bool json) {
  std::ostringstream out;
  Analysis a = run_passes(o);
  if (json)
    a.write_json(out);
  else
    a.write_text(out);
  return out.str();
}

AnalyzeOptions options(const std::string& input) {
  AnalyzeOptions o;
  o.input = input;
  o.threads = 1;
  return o;
}

// bench-bench-5032: open, pread x16404, close, then open/close twice (tests/efg).
TEST(StructurePass, DftracerSampleMainLoopInTextAndJson) {
  const AnalyzeOptions o = options(kSamples + "/bench-bench-5032-preload.pfw.gz");
  const std::string text = report(o, false);
  EXPECT_NE(text.find("\nStructure (strata efg): main loop of pid 5032: "
                      "loop x3 { open pread x16404 close }\n"),
            std::string::npos)
      << text;
  const std::string json = report(o, true);
  const size_t at = json.find("\n \"structure\": [{\"pids\":[5032],");
  ASSERT_NE(at, std::string::npos) << json;
  const std::string section = json.substr(at, json.find('\n', at + 1) - at);
  EXPECT_NE(section.find("\"events\":16410,"), std::string::npos) << section;
  EXPECT_NE(section.find("\"main_loop\":{\"structure\":\"loop x3 { open pread x16404 close }\","), std::string::npos)
      << section;
  EXPECT_NE(section.find("\"entries\":1,\"iterations\":3,"), std::string::npos) << section;
}

// Two units (.pfw and .pfw.gz, three processes): each unit's states saved,
// merged as bytes and reported equal the in-process analysis.
TEST(StructurePass, SavedAndMergedStatesGiveTheSameReport) {
  const AnalyzeOptions o = options(kSamples);
  ASSERT_EQ(list_units(kSamples).size(), 2u);
  const std::string merged = merge_bytes(o, analyze_unit_bytes(o, 0), analyze_unit_bytes(o, 1));
  const std::string json = report(o, true);
  EXPECT_NE(json.find("\"structure\": [{\"pids\":["), std::string::npos);
  EXPECT_EQ(report_from_bytes(o, merged, true), json);
  EXPECT_EQ(report_from_bytes(o, merged, false), report(o, false));
}

TEST(StructurePass, CorruptGraphStateIsANamedError) {
  const AnalyzeOptions o = options(kSamples);
  std::string bytes = analyze_unit_bytes(o, 0);
  const size_t efg = bytes.rfind("EFG2");
  ASSERT_NE(efg, std::string::npos);
  bytes[efg + 3] = '9';
  try {
    report_from_bytes(o, bytes, true);
    FAIL() << "a corrupt graph state was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("analysis state"), std::string::npos) << e.what();
  }
}

}  // namespace
