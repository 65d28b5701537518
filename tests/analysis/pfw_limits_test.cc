// The DFTracer importer on bad input (issue 8, section 4): an overlong line
// is an error naming the file and line, and strings decode Python's
// surrogateescape (\udc80..\udcff = one raw byte) back to the raw bytes.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>

#include "analysis/analyze.h"
#include "analysis/pfw_source.h"

using namespace strata::analysis;

namespace {

struct Tmp {
  std::string dir;
  Tmp() {
    char t[] = "/tmp/strata-pfwlim-XXXXXX";
    dir = mkdtemp(t);
  }
  ~Tmp() { std::system(("rm -rf '" + dir + "'").c_str()); }
};

Job load(const std::string& path) {
  AnalyzeOptions o;
  o.input = path;
  return analyze_job(o);
}

std::string unescape(const std::string& json) {  // json: a string's content and its closing quote
  std::string out;
  const char* bad = unescape_json_string(json.data(), json.data() + json.size(), out);
  return bad ? std::string("ERROR: ") + bad : out;
}

}  // namespace

TEST(PfwLimits, UnescapeSurrogateEscape) {
  EXPECT_EQ(unescape("abc\""), "abc");
  EXPECT_EQ(unescape("a\\\"b\\\\c\\/d\\n\""), "a\"b\\c/d\n");
  EXPECT_EQ(unescape("\\u00e9\""), "\xc3\xa9");
  EXPECT_EQ(unescape("\\ud83d\\ude00\""), "\xf0\x9f\x98\x80");  // a surrogate pair
  EXPECT_EQ(unescape("/d/\\udcff\\udc80x\""), std::string("/d/\xff\x80x"));
  EXPECT_EQ(unescape("\\uDCE9\""), std::string("\xe9"));
  EXPECT_EQ(unescape("\\udc7f\""), "ERROR: lone low surrogate in a \\u escape (only \\udc80..\\udcff, raw bytes, are allowed)");
  EXPECT_EQ(unescape("\\ud800x\""), "ERROR: lone high surrogate in a \\u escape");
  EXPECT_EQ(unescape("\\u12\""), "ERROR: bad \\u escape");
  EXPECT_EQ(unescape("abc"), "ERROR: unterminated string");
  EXPECT_EQ(unescape("a\\q\""), "ERROR: bad escape in a string");
}

// A path with non-UTF-8 bytes, as strata's pfw writer escapes it, reads back
// byte-exactly.
TEST(PfwLimits, NonUtf8PathReadsBackRawBytes) {
  Tmp t;
  const std::string p = t.dir + "/raw.pfw";
  std::ofstream(p) << "[\n"
                   << R"({"id":1,"name":"open","cat":"POSIX","pid":7,"tid":7,"ts":10,"dur":2,"ph":"X","args":{"fname":"/data/\udcff\udc80img\u00e9.bin","ret":3,"fd":3}})"
                   << "\n"
                   << R"({"id":2,"name":"read","cat":"POSIX","pid":7,"tid":7,"ts":20,"dur":2,"ph":"X","args":{"fname":"/data/\udcff\udc80img\u00e9.bin","ret":4096,"count":4096,"fd":3}})"
                   << "\n]\n";
  Job j = load(p);
  EXPECT_EQ(j.events, 2u);
  const std::string want = "/data/\xff\x80img\xc3\xa9.bin";
  ASSERT_EQ(j.files.size(), 1u);
  EXPECT_EQ(j.files.begin()->path, want);
  EXPECT_EQ(j.files.begin()->bytes_read, 4096);
}

TEST(PfwLimits, BadEscapeIsAnErrorNamingTheLine) {
  Tmp t;
  const std::string p = t.dir + "/bad.pfw";
  std::ofstream(p) << "[\n"
                   << R"({"id":1,"name":"open","cat":"POSIX","pid":7,"tid":7,"ts":10,"dur":2,"ph":"X","args":{"fname":"/a","ret":3}})"
                   << "\n"
                   << R"({"id":2,"name":"open","cat":"POSIX","pid":7,"tid":7,"ts":10,"dur":2,"ph":"X","args":{"fname":"/\udc00","ret":3}})"
                   << "\n]\n";
  try {
    load(p);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(p + ":3: invalid JSON string: lone low surrogate"), std::string::npos) << e.what();
  }
}

// A 20 MiB line (over the 16 MiB limit) gzip-compressed to ~20 KB: an error
// naming file and line 2; a 15 MiB line (under it) is read.
TEST(PfwLimits, OverlongLineIsAnError) {
  Tmp t;
  auto make = [&](const std::string& p, size_t pad) {
    gzFile g = gzopen(p.c_str(), "wb1");
    std::string a = "[\n{\"id\":1,\"name\":\"open\",\"cat\":\"POSIX\",\"pid\":7,\"tid\":7,\"ts\":10,\"dur\":2,\"ph\":\"X\","
                    "\"args\":{\"ret\":3,\"fname\":\"/";
    std::string pads(pad, 'x');
    std::string b = "\"}}\n]\n";
    gzwrite(g, a.data(), static_cast<unsigned>(a.size()));
    gzwrite(g, pads.data(), static_cast<unsigned>(pads.size()));
    gzwrite(g, b.data(), static_cast<unsigned>(b.size()));
    gzclose(g);
  };
  const std::string big = t.dir + "/big.pfw.gz";
  make(big, 20u << 20);
  try {
    load(big);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              big + ":2: line longer than 16 MiB (the limit for one DFTracer event line; corrupt or not a DFTracer trace)");
  }
  const std::string ok = t.dir + "/ok.pfw.gz";
  make(ok, 15u << 20);
  Job j = load(ok);
  EXPECT_EQ(j.events, 1u);
}
