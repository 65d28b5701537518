// `strata efg`: event flow graphs (src/efg, docs/efg.md).
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "efg/compress.h"
#include "efg/run.h"
#include "strata/reader.h"

namespace strata::cli {

namespace {

int run_compress(const efg::CompressOptions& opts) {
  try {
    efg::print_compress_summary(opts, efg::compress_trace(opts), std::cerr);
    return 0;
  } catch (const reader::FormatError& e) {
    std::cerr << "strata efg: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "strata efg: error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace

void add_efg(CLI::App& app) {
  auto opts = std::make_shared<efg::EfgOptions>();
  CLI::App* sub = app.add_subcommand("efg", "Event flow graph of a trace: nodes, transitions, loops and nesting");
  sub->add_option("trace", opts->input, "trace directory or file (.strata, .pfw, .pfw.gz, or a directory)")
      ->required();
  sub->add_flag("--json", opts->json, "graphs and loops as JSON (docs/efg.md)");
  sub->add_option("--dot", opts->dot_file, "write the graph in graphviz DOT to this file");
  sub->add_option("--svg", opts->svg_file, "draw the graph to this SVG file (needs graphviz's dot)");
  sub->add_option("--pid", opts->pid, "process drawn by --dot/--svg (default: the only one, else the job)");
  sub->add_option("--file-class", opts->file_class, "file part of a node: dir (default), path or any");
  sub->add_option("--threads", opts->threads, "units read in parallel (default: up to 2)");
  sub->add_flag("--no-size-classes", opts->no_size_classes, "do not split nodes by request size (log2)");
  auto compress = std::make_shared<efg::CompressOptions>();
  auto do_compress = std::make_shared<bool>(false);
  auto* c = sub->add_flag("--compress", *do_compress, "write the trace with its events as temporal EFGs (lossless) to -o DIR");
  auto* o = sub->add_option("-o,--output", compress->output, "output directory of --compress (new or empty)");
  auto* nt = sub->add_flag("--no-times", compress->no_times, "with --compress: drop times (and only times)");
  c->needs(o);
  o->needs(c);
  nt->needs(c);
  sub->callback([opts, compress, do_compress]() {
    if (*do_compress) {
      compress->input = opts->input;
      int rc = run_compress(*compress);
      if (rc != 0) throw CLI::RuntimeError(rc);
      return;
    }
    int rc = efg::run_efg(*opts, std::cout, std::cerr);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata::cli
