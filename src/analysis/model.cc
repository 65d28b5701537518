#include "analysis/model.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <unordered_map>

#include "runtime/functions.h"

namespace strata::analysis {

namespace rt = strata::runtime;

const char* layer_name(Layer l) {
  if (l == Layer::kApp) return "APP";
  const auto i = static_cast<uint32_t>(l);
  return i < rt::kNumLayers ? rt::kLayerInfo[i].category : "?";
}

namespace {

using counters::Op;

static_assert(static_cast<uint32_t>(Layer::kPosix) == static_cast<uint32_t>(rt::Layer::POSIX) &&
              static_cast<uint32_t>(Layer::kStdio) == static_cast<uint32_t>(rt::Layer::STDIO) &&
              static_cast<uint32_t>(Layer::kProc) == static_cast<uint32_t>(rt::Layer::PROC) &&
              static_cast<uint32_t>(Layer::kApp) == rt::kNumLayers,
              "analysis::Layer is the runtime's layer table plus kApp");

bool starts(std::string_view n, std::string_view p) { return n.substr(0, p.size()) == p; }

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

// Strips glibc's fortify / 64-bit / unlocked decorations: __read_chk -> read,
// __pread64_chk -> pread64, fread_unlocked -> fread, __open_2 -> open.
std::string_view base_name(std::string_view n) {
  if (starts(n, "__") && n.size() > 6 && n.substr(n.size() - 4) == "_chk") n = n.substr(2, n.size() - 6);
  if (starts(n, "__") && n.size() > 4 && n.substr(n.size() - 2) == "_2") n = n.substr(2, n.size() - 4);
  if (n.size() > 9 && n.substr(n.size() - 9) == "_unlocked") n = n.substr(0, n.size() - 9);
  return n;
}

// Name -> function of the one table (runtime/functions.h), with its aliases.
const std::unordered_map<std::string_view, rt::Fn>& fn_index() {
  static const auto* index = [] {
    auto* m = new std::unordered_map<std::string_view, rt::Fn>();
    for (uint32_t i = 1; i < rt::kNumFns; ++i) m->emplace(rt::kFnInfo[i].name, static_cast<rt::Fn>(i));
    for (const auto& a : rt::kFnAliases) m->emplace(a.name, a.fn);
    return m;
  }();
  return *index;
}

// The layer of a category (case-insensitive): the layer table's categories
// and their aliases; kApp for anything else.
Layer layer_of_category(const std::string& cat) {
  for (uint32_t i = 0; i < rt::kNumLayers; ++i)
    if (cat == lower(rt::kLayerInfo[i].category)) return static_cast<Layer>(i);
  for (const auto& a : rt::kLayerAliases)
    if (cat == a.category) return static_cast<Layer>(a.layer);
  return Layer::kApp;
}

}  // namespace

FuncInfo classify(std::string_view raw_name, std::string_view category) {
  FuncInfo f;
  f.name = std::string(raw_name);
  f.category = std::string(category);
  const std::string cat = lower(category);
  f.layer = layer_of_category(cat);
  if (f.layer == Layer::kApp) {
    const std::string ln = lower(raw_name);
    f.is_compute = cat.find("compute") != std::string::npos || ln.find("compute") != std::string::npos;
    // strata's Python layer (python/strata/_auto.py) records one
    // "dataloader.next" per batch the training loop asked the DataLoader for.
    auto ends = [&](std::string_view suffix) {
      return ln.size() >= suffix.size() && ln.compare(ln.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    f.is_loader_wait = ends("dataloader.next");
    f.is_loader_start = ends("dataloader.iter");
    f.is_loader_pass = ends("dataloader.epoch");
    f.is_loader_stop = ends("dataloader.stop");
    return f;
  }
  const auto& index = fn_index();
  auto it = index.find(base_name(raw_name));
  if (it == index.end()) return f;  // a call of the layer the table does not count
  const rt::FnInfo& fi = rt::kFnInfo[static_cast<uint32_t>(it->second)];
  if (fi.layer == rt::Layer::PROC) {
    f.layer = Layer::kProc;  // DFTracer files fork under POSIX
    f.is_fork = it->second == rt::Fn::fork || it->second == rt::Fn::vfork;
    if (it->second == rt::Fn::exit || it->second == rt::Fn::_exit || it->second == rt::Fn::_Exit)
      f.ends_process = FuncInfo::End::kExit;
    else if (it->second == rt::Fn::signal_flush)
      f.ends_process = FuncInfo::End::kSignal;
    return f;
  }
  // A function counts in its own layer only (a STDIO name under a POSIX
  // category is not a STDIO call).
  if (static_cast<uint32_t>(fi.layer) != static_cast<uint32_t>(f.layer) || f.layer == Layer::kProc) return f;
  f.op = fi.op;
  f.positional = fi.positional;
  f.is_read = f.op == Op::kRead;
  f.is_write = f.op == Op::kWrite;
  f.data = fi.data;
  f.is_sync = f.op == Op::kFsync || f.op == Op::kFdatasync;
  return f;
}

}  // namespace strata::analysis
