// strata: trace a command (run), inspect (info, cat), convert and analyze traces.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "cli/commands.h"
#include "strata/reader.h"

int main(int argc, char** argv) {
  CLI::App app{"strata: a tracer and analyzer for the data flow of AI and HPC workflows"};
  app.require_subcommand(1);
  app.set_version_flag("--version", STRATA_VERSION_STRING);
  strata::cli::add_run(app);
  strata::cli::add_info(app);
  strata::cli::add_cat(app);
  strata::cli::add_convert(app);
  strata::cli::add_analyze(app);
  strata::cli::add_efg(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const strata::reader::FormatError& e) {
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 2;
  }
  // Output to a full disk (or a closed pipe) must not look like success:
  // every write to stdout went through its FILE, whose error flag sticks.
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "strata: error: writing standard output failed (%s): the output is incomplete\n",
                 errno ? std::strerror(errno) : "write error");
    return 2;
  }
  return 0;
}
