// `strata`, the lean front: runs `strata run` itself and hands every other
// command to `strata-tools` (the full command line, beside this binary) by
// exec, with the same arguments.
//
// Why: `strata run` stays alive for the whole job, and the full binary costs
// ~20 ms of CPU before main (a 59 MB executable to relocate, and cpp-httplib's
// OpenSSL, brotli, simdjson, fmt and zstd to load and initialise), which a
// short job pays in full. This binary links CLI11 (header-only) and the
// standard library only. `run --live` (the live server), `run --help` and any
// `run` arguments CLI11 rejects go to strata-tools too, so that their output
// and messages are exactly those of the full command line.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "cli/commands.h"

namespace {

[[noreturn]] void exec_tools(char** argv) {
  const std::string tools = strata::cli::self_dir() + "/strata-tools";
  execv(tools.c_str(), argv);
  std::fprintf(stderr, "strata: error: cannot run %s: %s\n", tools.c_str(), std::strerror(errno));
  std::exit(2);
}

// True for a `strata run` this binary serves: no --live (its server is in
// strata-tools) and no help request among the options before the command.
bool lean_run(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "run") return false;
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "-h" || a == "--help" || a.starts_with("--live") || a.starts_with("--port") ||
        a.starts_with("--listen"))
      return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!lean_run(argc, argv)) exec_tools(argv);
  CLI::App app{"strata: a tracer and analyzer for the data flow of AI and HPC workflows"};
  app.require_subcommand(1);
  strata::cli::add_run(app);
  try {
    app.parse(argc, argv);  // the run callback exits with the command's status
  } catch (const CLI::ParseError&) {
    exec_tools(argv);  // strata-tools names the mistake exactly as for any command
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
