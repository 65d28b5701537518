// libFuzzer target: the DFTracer importer (PfwSource) on a .pfw line stream.
// The first byte picks the container: even = the rest as a plain .pfw, odd =
// the rest gzip-compressed into a .pfw.gz (a raw gzip input reaches zlib's
// error paths through the plain case too: the importer sniffs the magic).
// An InputError is a clean rejection; anything else is a bug.
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/pfw_source.h"

using namespace strata::analysis;

namespace {
struct Sink : UnitConsumer {
  uint64_t n = 0;
  const Tables* t = nullptr;
  void begin(const std::string&, const Tables* tables, bool) override { t = tables; }
  void process(const ProcessMeta& m) override { n += m.host.size() + m.cmdline.size(); }
  void event(const IoEvent& e) override {
    n += static_cast<uint64_t>(e.ts) + t->str(e.path).size();
    if (e.func < t->funcs.size()) n += 1;
  }
  void warning(const std::string& w) override { n += w.size(); }
  void end() override {}
};

std::string gzip(const uint8_t* p, size_t n) {
  z_stream z{};
  deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, n) + 64, '\0');
  z.next_in = const_cast<Bytef*>(p);
  z.avail_in = static_cast<uInt>(n);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool gz = data[0] & 1;
  static const std::string base = "/tmp/strata-fuzz-pfw-" + std::to_string(getpid());
  const std::string path = base + (gz ? ".pfw.gz" : ".pfw");
  std::string bytes = gz ? gzip(data + 1, size - 1) : std::string(reinterpret_cast<const char*>(data + 1), size - 1);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  try {
    PfwSource src(path);
    Sink s;
    for (size_t i = 0; i < src.units().size(); ++i) src.read_unit(i, s);
  } catch (const InputError&) {
  }
  return 0;
}
