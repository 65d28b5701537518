// strata: trace a command (run), inspect (info, cat), convert and analyze traces.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <algorithm>
#include <exception>

#include "cli/commands.h"
#include "strata/reader.h"

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

CLI::App* find_command(CLI::App& app, const std::string& name) {
  auto found = app.get_subcommands([&](CLI::App* sub) { return sub->check_name(name); });
  return found.empty() ? nullptr : found.front();
}

// `strata WORD` where WORD is no command: names the closest one. Returns
// false when WORD is a command (or an option).
bool unknown_command(CLI::App& app, const std::string& word) {
  if (word.empty() || word[0] == '-' || find_command(app, word)) return false;
  std::string best, all;
  size_t best_d = 3;  // suggest only within 2 edits
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    const std::string& name = sub->get_name();
    all += (all.empty() ? "" : ", ") + name;
    const size_t d = edit_distance(word, name);
    if (d < best_d) best_d = d, best = name;
  }
  std::fprintf(stderr, "strata: unknown command '%s'", word.c_str());
  if (!best.empty()) std::fprintf(stderr, "; did you mean `%s`?", best.c_str());
  std::fprintf(stderr, "\nthe commands: %s (strata --help)\n", all.c_str());
  return true;
}

// After CLI11 found arguments it did not expect: the first option the
// command does not know, named alone (CLI11 lists it with every leftover
// argument). Returns false when none is an unknown option.
bool unknown_option(CLI::App& app, int argc, char** argv) {
  CLI::App* sub = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (!sub) {
      if (arg[0] != '-') sub = find_command(app, arg);
      if (sub) continue;
    }
    if (arg.size() < 2 || arg[0] != '-') continue;
    const std::string name = arg.substr(0, arg.find('='));
    CLI::App* owner = sub ? sub : &app;
    if (name == "-h" || name == "--help" || owner->get_option_no_throw(name)) continue;
    if (!sub && name == "--version") continue;
    const std::string cmd = sub ? "strata " + sub->get_name() : std::string("strata");
    std::fprintf(stderr, "%s: unknown option %s (%s --help lists the options)\n", cmd.c_str(), name.c_str(),
                 cmd.c_str());
    return true;
  }
  return false;
}

}  // namespace

// CLI11 prints the message; its own codes for a usage error (100-127: 104
// a bad value, 106 a missing option...) become the documented 2. --help and
// --version keep their 0, a command's CLI::RuntimeError its own code.
static int usage_exit(CLI::App& app, const CLI::ParseError& e) {
  const int code = app.exit(e);
  return code >= 100 && code <= 127 ? 2 : code;
}

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
  strata::cli::add_ctl(app);
  strata::cli::add_serve(app);
  if (argc > 1 && unknown_command(app, argv[1])) return 2;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    if (unknown_option(app, argc, argv)) return 2;
    return usage_exit(app, e);
  } catch (const CLI::ParseError& e) {
    return usage_exit(app, e);
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
