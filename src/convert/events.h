// Walks every event of a trace, file by file and block by block, handing each
// to a visitor with the decoded batch and its file's dictionary. The shared
// loop of `strata cat`, `strata info` and the converters.
#pragma once

#include <functional>
#include <string>

#include "strata/reader.h"

namespace strata::convert {

struct EventRef {
  const reader::FileReader& file;
  const reader::EventBatch& batch;
  size_t i;
  const reader::NameInfo& name() const { return file.dict().name(batch.name[i]); }
};

// Per-file callbacks: begin_file before a file's events, then every event.
struct Visitor {
  std::function<void(const reader::FileReader&)> begin_file;
  std::function<void(const EventRef&)> event;
  std::function<void(const reader::FileReader&)> end_file;
};

void visit_trace(const std::string& path, const Visitor& v);

// Writes the tags of a context as a JSON object body ("k":v,...) into out.
class JsonOut;
void write_tags(JsonOut& out, const reader::Dictionary& dict, uint32_t ctx);

// Writes the fields that apply to the event's function, each as ,"key":value
// (path, fd, offset, size, value, ret, errno when set, tags when any).
void write_fields(JsonOut& out, const EventRef& e);

}  // namespace strata::convert
