// `strata run` as a launcher (signals forwarded to the command, commands that
// cannot run, descendants left running, `strata info` on a trace still being
// written) and the one JSON escaper of every JSON output (non-UTF-8 paths,
// surrogateescape convention), with real processes under the real `strata run`.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "format/json_escape.h"
#include "harness.h"

namespace {

using namespace core_test;

// The command's status, without reaping it: -1 while it runs.
bool still_running(pid_t pid) {
  siginfo_t si{};
  if (waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return si.si_pid == 0;
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// ---- signals --------------------------------------------------------------------

TEST(Launcher, ForwardsUserSignalsAndReturnsTheCommandsStatus) {
  TempDir tmp;
  const std::string got = tmp.sub("got"), ready = tmp.sub("ready"), stop = tmp.sub("stop");
  // USR1 is handled, TERM ignored; the loop is bounded (10 s).
  const std::string script = "trap 'echo usr1 >> " + got + "' USR1; trap '' TERM; : > " + ready +
                             "; i=0; while [ ! -e " + stop + " ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; exit 7";
  Child c = start({kStrata, "run", "-q", "-o", tmp.sub("trace"), "--", "/bin/sh", "-c", script});
  ASSERT_TRUE(wait_for([&] { return fs::exists(ready); }, 20));
  ASSERT_EQ(kill(c.pid, SIGUSR1), 0);
  EXPECT_TRUE(wait_for([&] { return read_text(got) == "usr1\n"; }, 10)) << read_text(got);
  EXPECT_TRUE(still_running(c.pid)) << "SIGUSR1 ended strata";
  // Forwarded TERM: the command ignores it and keeps running; so does strata.
  ASSERT_EQ(kill(c.pid, SIGTERM), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(still_running(c.pid)) << "SIGTERM ended strata while the command ignores it";
  write_text(stop, "");
  RunResult r = finish(c, 30);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.code, 7) << r.err;
  EXPECT_EQ(read_text(got), "usr1\n");  // delivered once
}

// A signal that reaches the command directly and through strata run (sent to
// the process group, as `timeout` and `kill -- -PGID` do; or to each pid, as
// Slurm does) is handled once, as without strata, with the sender's pid and
// SI_USER; one sent to strata only is handled once too. The same program
// without strata is the reference.
enum class Send { kGroup, kEachPid, kLauncherOnly, kLauncherTwice };

std::string count_usr1(Send how, bool traced, const std::string& flags = "") {
  TempDir tmp;
  std::vector<std::string> argv = {HOSTILE_BIN, "sigcount", tmp.path()};
  if (!flags.empty()) argv.push_back(flags);
  if (traced) argv.insert(argv.begin(), {kStrata, "run", "-q", "-o", tmp.sub("trace"), "--"});
  Child c = start(argv);
  const std::string ready = tmp.sub("ready");
  if (!wait_for([&] { return fs::exists(ready); }, 20)) return "never ready";
  const pid_t command = static_cast<pid_t>(std::stol(read_text(ready)));
  auto send = [&] {
    if (how == Send::kGroup) kill(-c.pid, SIGUSR1);
    if (how == Send::kEachPid) {
      kill(c.pid, SIGUSR1);
      if (command != c.pid) kill(command, SIGUSR1);
    }
    if (how == Send::kLauncherOnly || how == Send::kLauncherTwice) kill(c.pid, SIGUSR1);
  };
  send();
  // Both copies have time to arrive (strata forwards within milliseconds).
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  if (how == Send::kLauncherTwice) {
    // A second signal, sent on purpose after the first was handled: not a twin.
    std::this_thread::sleep_for(std::chrono::milliseconds(900));
    send();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  write_text(tmp.sub("stop"), "");
  RunResult r = finish(c, 30);
  return r.out + (r.code == 0 ? "" : " exit " + std::to_string(r.code) + " " + r.err);
}

TEST(Launcher, ASignalSentToTheGroupIsHandledOnce) {
  const std::string expected = "usr1 1 code 0 from " + std::to_string(getpid()) + "\n";
  EXPECT_EQ(count_usr1(Send::kGroup, false), expected);
  EXPECT_EQ(count_usr1(Send::kGroup, true), expected);
  EXPECT_EQ(count_usr1(Send::kEachPid, true), expected);
  EXPECT_EQ(count_usr1(Send::kLauncherOnly, true), expected);
  EXPECT_EQ(count_usr1(Send::kLauncherTwice, true), "usr1 2 code 0 from " + std::to_string(getpid()) + "\n");
}

// SA_RESETHAND: the first copy runs the handler and the action goes back to
// SIG_DFL; the twin must neither kill the program nor be seen.
TEST(Launcher, AOneShotHandlerSurvivesTheTwinOfItsSignal) {
  const std::string expected = "usr1 1 code 0 from " + std::to_string(getpid()) + "\n";
  EXPECT_EQ(count_usr1(Send::kGroup, false, "oneshot"), expected);
  EXPECT_EQ(count_usr1(Send::kGroup, true, "oneshot"), expected);
  EXPECT_EQ(count_usr1(Send::kEachPid, true, "oneshot"), expected);
}

// strata ends by the command's signal, after the command: a strata that died
// of the signal itself would leave the command running, orphaned.
TEST(Launcher, CommandKilledByAForwardedSignalGives128PlusSignal) {
  TempDir tmp;
  const std::string ready = tmp.sub("ready");
  Child c = start({kStrata, "run", "-q", "-o", tmp.sub("trace"), "--", "/bin/sh", "-c",
                   "echo $$ > " + ready + ".tmp; mv " + ready + ".tmp " + ready +
                       "; i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done"});
  ASSERT_TRUE(wait_for([&] { return fs::exists(ready); }, 20));
  const pid_t command = std::stoi(read_text(ready));
  ASSERT_EQ(kill(c.pid, SIGUSR2), 0);
  RunResult r = finish(c, 30);
  const bool orphaned = kill(command, 0) == 0;
  if (orphaned) kill(command, SIGKILL);  // the command this test started, by pid
  EXPECT_FALSE(orphaned) << "strata ended before the command";
  EXPECT_EQ(r.signal, SIGUSR2) << r.err;
  EXPECT_EQ(r.code, 128 + SIGUSR2) << r.err;
}

// A command killed by a signal: strata run ends by the same signal, as the
// command would end without it, so whoever started it sees the same status
// (Python's returncode -10, not 138; a shell's "User defined signal 1").
TEST(Launcher, EndsByTheSignalThatEndedTheCommand) {
  TempDir tmp;
  for (int sig : {SIGUSR1, SIGKILL, SIGSEGV}) {
    const std::vector<std::string> command = {"/bin/sh", "-c", "kill -" + std::to_string(sig) + " $$"};
    std::vector<std::string> traced = {kStrata, "run", "-q", "-o", tmp.sub("t" + std::to_string(sig)), "--"};
    traced.insert(traced.end(), command.begin(), command.end());
    RunResult p = run(command, 30), t = run(traced, 30);
    EXPECT_EQ(p.signal, sig) << p.err;
    EXPECT_EQ(t.signal, p.signal) << t.err;
    EXPECT_EQ(t.code, 128 + sig) << t.err;
  }
}

// ^C in a shell script (SIGINT to the foreground process group): the shell
// stops the script when its child died of SIGINT. strata run exited 130
// instead, and the script went on with its next command.
TEST(Launcher, InterruptStopsTheScriptThatRanIt) {
  TempDir tmp;
  auto interrupted = [&](const std::string& prefix) {
    const std::string ready = tmp.sub("ready" + std::to_string(prefix.size()));
    Child c = start({"/bin/bash", "-c", prefix + "/bin/sh -c ': > " + ready + "; exec sleep 20'; echo went on"});
    EXPECT_TRUE(wait_for([&] { return fs::exists(ready); }, 20));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the exec of sleep
    kill(-c.pid, SIGINT);  // the group, as the terminal's ^C
    return finish(c, 30);
  };
  RunResult p = interrupted(""), t = interrupted(shell_quote(kStrata) + " run -q -o " + shell_quote(tmp.sub("t")) + " -- ");
  EXPECT_EQ(p.out, "");
  EXPECT_EQ(p.signal, SIGINT);
  EXPECT_EQ(t.out, p.out);
  EXPECT_EQ(t.signal, p.signal) << t.err;
}

// Started with SIGCHLD ignored (a daemon or batch shell that ignores it, then
// execs): the kernel would reap the command itself, and strata returned 0
// whatever the command's status. The command still inherits the ignored
// disposition, as it would without strata.
TEST(Launcher, ReturnsTheStatusWhenStartedWithSigchldIgnored) {
  TempDir tmp;
  const std::string ignore_then_exec =
      "import signal, os, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])";
  const std::vector<std::string> command = {"/usr/bin/python3", "-c",
                                            "import signal, sys; print(signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN); sys.exit(7)"};
  std::vector<std::string> plain = {"/usr/bin/python3", "-c", ignore_then_exec};
  plain.insert(plain.end(), command.begin(), command.end());
  std::vector<std::string> traced = {"/usr/bin/python3", "-c", ignore_then_exec, kStrata, "run", "-q", "-o", tmp.sub("trace"), "--"};
  traced.insert(traced.end(), command.begin(), command.end());
  RunResult p = run(plain, 30), t = run(traced, 30);
  EXPECT_EQ(p.code, 7) << p.err;
  EXPECT_EQ(t.code, 7) << t.err;
  EXPECT_EQ(p.out, "True\n");
  EXPECT_EQ(t.out, p.out);
}

// A library preloaded into strata itself starts a thread that blocks no
// signal. A TERM sent to strata while its main thread is not waiting in
// sigtimedwait (here: as soon as the command is forked, before its exec) goes
// to that thread; without strata's handler it ended strata by the default
// action and left the command running, orphaned. Sent later, the main thread
// takes it: the test then passes either way, it cannot fail spuriously.
TEST(Launcher, ForwardsASignalThatAThreadOfAPreloadedLibraryReceives) {
  TempDir tmp;
  const char* asan = std::getenv("ASAN_OPTIONS");  // the library comes before ASan's runtime
  const std::vector<std::string> env = {std::string("LD_PRELOAD=") + THREAD_AT_LOAD_LIB,
                                        std::string("ASAN_OPTIONS=") + (asan ? std::string(asan) + ":" : "") +
                                            "verify_asan_link_order=0"};
  for (int attempt = 0; attempt < 3; ++attempt) {
    Child c = start({kStrata, "run", "-q", "-o", tmp.sub("trace" + std::to_string(attempt)), "--", "/bin/sleep", "20"}, env);
    const std::string children = "/proc/" + std::to_string(c.pid) + "/task/" + std::to_string(c.pid) + "/children";
    // Polled without sleeping (bounded): the window before the exec is short.
    pid_t command = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (command <= 0 && std::chrono::steady_clock::now() < deadline) {
      std::ifstream f(children);
      if (!(f >> command)) command = 0;
    }
    ASSERT_GT(command, 0) << "no command forked within 20 s";
    ASSERT_EQ(kill(c.pid, SIGTERM), 0);
    RunResult r = finish(c, 30);
    const bool orphaned = kill(command, 0) == 0;
    if (orphaned) kill(command, SIGKILL);  // the command this test started, by pid
    EXPECT_EQ(r.signal, SIGTERM) << r.err;  // after the command, which it ended
    EXPECT_EQ(r.code, 128 + SIGTERM) << r.err;
    EXPECT_FALSE(orphaned) << "the command outlived strata";
  }
}

// ---- the lean launcher ------------------------------------------------------------

// `strata run` stays alive for the whole job: it is the lean front binary,
// which maps neither OpenSSL nor cpp-httplib (strata-tools has them for the
// live server); every other command reaches strata-tools with its output.
TEST(Launcher, RunIsTheLeanFrontAndOtherCommandsReachTheTools) {
  TempDir tmp;
  const std::string maps = tmp.sub("maps");
  RunResult r = run({kStrata, "run", "-q", "-o", tmp.sub("trace"), "--", "/bin/sh", "-c",
                     "cat /proc/$PPID/maps > " + shell_quote(maps)});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string m = read_text(maps);
  ASSERT_NE(m.find(fs::canonical(kStrata).string() + "\n"), std::string::npos) << "not the launcher's maps: " << m;
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // Linked in: nothing to relocate at start (a sanitizer's runtime maps the
  // shared one for itself).
  EXPECT_EQ(m.find("libstdc++"), std::string::npos);
#endif
  EXPECT_EQ(m.find("libcrypto"), std::string::npos);
  EXPECT_EQ(m.find("libcpp-httplib"), std::string::npos);
  EXPECT_EQ(m.find("strata-tools"), std::string::npos);
  // Another command: the same answer as strata-tools gives, exit status too.
  const std::string tools = (fs::path(kStrata).parent_path() / "strata-tools").string();
  RunResult front = run({kStrata, "info", tmp.sub("trace")});
  RunResult full = run({tools, "info", tmp.sub("trace")});
  EXPECT_EQ(front.code, 0) << front.err;
  EXPECT_EQ(front.out, full.out);
  EXPECT_NE(front.out.find("sh"), std::string::npos) << front.out;
  // A run mistake is named by strata-tools, exactly as before the split.
  RunResult bad = run({kStrata, "run", "--no-such-option", "--", "/bin/true"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("strata run: unknown option --no-such-option"), std::string::npos) << bad.err;
}

// The repeatable path options take one value each: they swallowed the "--"
// and the command's own options were then taken for strata's (exit 2).
TEST(Launcher, RepeatableOptionsLeaveTheCommandItsOptions) {
  TempDir tmp;
  const std::string a = tmp.mkdir("a"), b = tmp.mkdir("b");
  for (const std::vector<std::string>& opts :
       {std::vector<std::string>{"--exclude", a, "--exclude=" + b, "--"},
        std::vector<std::string>{"--include", tmp.path(), "--exclude", a, "--"}}) {
    std::vector<std::string> argv = {kStrata, "run", "-q", "-o", tmp.sub("trace")};
    argv.insert(argv.end(), opts.begin(), opts.end());
    for (const char* c : {"/bin/sh", "-c", "echo \"$STRATA_EXCLUDE|$STRATA_INCLUDE\"; exit 7"}) argv.push_back(c);
    RunResult r = run(argv);
    EXPECT_EQ(r.code, 7) << join(argv) << ": " << r.err;
    const bool two = opts[2] == "--exclude=" + b;
    const bool include = opts[0] == "--include";
    EXPECT_EQ(r.out, (two ? a + ":" + b : a) + "|" + (include ? tmp.path() : "") + "\n") << join(argv);
    fs::remove_all(tmp.sub("trace"));
  }
}

// ---- commands that cannot run -------------------------------------------------

TEST(Launcher, CommandNotFoundCreatesNothing) {
  TempDir tmp;
  const std::string cwd = tmp.mkdir("cwd");
  // The default trace name, in an empty working directory.
  RunResult r = run({"/bin/sh", "-c", "cd " + shell_quote(cwd) + " && exec " + shell_quote(kStrata) +
                                          " run -- strata-no-such-command-xyz arg"});
  EXPECT_EQ(r.code, 127);
  EXPECT_NE(r.err.find("strata: strata-no-such-command-xyz: command not found"), std::string::npos) << r.err;
  EXPECT_TRUE(listing(cwd).empty()) << core_test::join(listing(cwd));
  // -o with missing parents.
  const std::string out = tmp.mkdir("out");
  r = run({kStrata, "run", "-o", out + "/a/b/trace", "--", "strata-no-such-command-xyz"});
  EXPECT_EQ(r.code, 127);
  EXPECT_TRUE(listing(out).empty());
  r = run({kStrata, "run", "-o", out + "/t", "--", out + "/missing"});
  EXPECT_EQ(r.code, 127);
  EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
  EXPECT_TRUE(listing(out).empty());
  // Not executable: 126, as a shell.
  const std::string data = tmp.sub("data.txt");
  write_text(data, "not a program\n");
  chmod(data.c_str(), 0644);
  r = run({kStrata, "run", "-o", out + "/t", "--", data});
  EXPECT_EQ(r.code, 126);
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  r = run({kStrata, "run", "-o", out + "/t", "--", tmp.path()});
  EXPECT_EQ(r.code, 126);
  EXPECT_TRUE(listing(out).empty()) << core_test::join(listing(out));
}

// Process files a process created but could write nothing into (a full file
// system; here a file size limit of 0, which the command's own output, on a
// pipe, does not meet): strata run said "trace written (3 process files)"
// with every one of them empty.
TEST(Launcher, SaysWhenProcessFilesStayedEmpty) {
  TempDir tmp;
  const std::string trace = tmp.sub("trace");
  RunResult r = run({"/bin/sh", "-c", "ulimit -f 0 && exec " + shell_quote(kStrata) + " run -o " + shell_quote(trace) +
                                          " -- /bin/sh -c 'cat /etc/hostname >/dev/null; /bin/true; echo done'"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  const size_t files = listing(trace).size();
  ASSERT_GE(files, 2u) << r.err;
  const std::string n = std::to_string(files);
  EXPECT_NE(r.err.find("warning: " + n + " of " + n + " process files are empty"), std::string::npos) << r.err;
  // A file that was written is not counted.
  r = run({kStrata, "run", "-o", tmp.sub("good"), "--", "/bin/true"});
  EXPECT_EQ(r.err.find("empty"), std::string::npos) << r.err;
}

// A program image that wrote no trace (statically linked, setuid, its
// runtime switched off): `strata info` showed a successful execve and then
// nothing, as if the process had ended there. It now names the image.
TEST(Launcher, InfoNamesExecdProgramsThatWroteNoTrace) {
  TempDir tmp;
  const std::string trace = tmp.sub("trace"), done = tmp.sub("done");
  // In a forked child, in place, and a traced exec that must not be named.
  RunResult r = run({kStrata, "run", "-q", "-o", trace, "--", "/bin/bash", "-c",
                     "STRATA_DISABLE=1 /bin/cat /etc/hostname >/dev/null; /bin/true; STRATA_DISABLE=1 exec /bin/touch " +
                         shell_quote(done)});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_TRUE(fs::exists(done));
  RunResult i = run({kStrata, "info", trace});
  ASSERT_EQ(i.code, 0) << i.err;
  EXPECT_NE(i.out.find("untraced:       2 program image(s) wrote no trace"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("/bin/cat"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("/bin/touch"), std::string::npos) << i.out;
  EXPECT_EQ(i.out.find("/bin/true"), std::string::npos) << i.out;
  RunResult j = run({kStrata, "info", "--json", trace});
  EXPECT_NE(j.out.find("\"untraced\":[{\"pid\":"), std::string::npos) << j.out;
  // One file of the trace alone: the other images are not there to look for.
  for (auto& e : fs::directory_iterator(trace)) {
    RunResult one = run({kStrata, "info", e.path().string()});
    EXPECT_EQ(one.out.find("untraced"), std::string::npos) << one.out;
  }
}

// Python's subprocess and dash start children with vfork; a child whose exec
// fails (a program that is not installed, as `nvidia-smi` on a machine
// without GPUs) starts no image, and its errno is on the vfork event.
TEST(Launcher, InfoDoesNotNameAVforkChildWhoseExecFailed) {
  TempDir tmp;
  const std::string trace = tmp.sub("trace");
  const std::string script =
      "import subprocess\n"
      "try:\n"
      "    subprocess.run(['/nonexistent/prog'])\n"
      "except FileNotFoundError:\n"
      "    print('not installed')\n"
      "subprocess.run(['/bin/sh', '-c', '/nonexistent/other 2>/dev/null; /bin/true'])\n";
  RunResult r = run({kStrata, "run", "-q", "-o", trace, "--", "/usr/bin/python3", "-c", script});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "not installed\n");
  RunResult i = run({kStrata, "info", trace});
  ASSERT_EQ(i.code, 0) << i.err;
  EXPECT_EQ(i.out.find("untraced"), std::string::npos) << i.out;
  int failed_vforks = 0, vforks = 0;
  std::istringstream events(run({kStrata, "cat", trace}).out);
  for (std::string line; std::getline(events, line);) {
    if (line.find("\"name\":\"vfork\"") == std::string::npos) continue;
    ++vforks;
    failed_vforks += line.find("\"errno\":2") != std::string::npos;
  }
  EXPECT_GE(vforks, 2);
  EXPECT_EQ(failed_vforks, 2) << "one vfork per missing program carries ENOENT";
}

// ---- descendants still running ------------------------------------------------------

TEST(Launcher, NamesDescendantsStillRunningAndInfoSaysSo) {
  TempDir tmp;
  const std::string trace = tmp.sub("trace"), pidf = tmp.sub("pid");
  // A daemonised `sleep 3`; the command waits (bounded) until its trace file exists.
  const std::string script = "(sleep 3 >/dev/null 2>&1 </dev/null & echo $! > " + pidf + "); p=$(cat " + pidf +
                             "); i=0; while [ $i -lt 100 ] && ! ls " + trace + "/*-$p-*.strata >/dev/null 2>&1; do sleep 0.05; i=$((i+1)); done";
  RunResult r = run({kStrata, "run", "-o", trace, "--", "/bin/sh", "-c", script}, 30);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string pid = read_text(pidf).substr(0, read_text(pidf).find('\n'));
  ASSERT_FALSE(pid.empty());
  EXPECT_NE(r.err.find("still running"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pid " + pid + ": "), std::string::npos) << r.err;
  // While it runs, `strata info` says its file is being written, not killed.
  bool writing = wait_for([&] {
    RunResult i = run({kStrata, "info", trace});
    return i.out.find("still being written by pid " + pid) != std::string::npos;
  }, 2);
  EXPECT_TRUE(writing) << run({kStrata, "info", trace}).out;
  RunResult j = run({kStrata, "info", "--json", trace});
  if (kill(std::stoi(pid), 0) == 0) {
    EXPECT_NE(j.out.find("\"writing_pids\":[" + pid + "]"), std::string::npos) << j.out;
  }
  // Once it has exited (bounded wait; it is not ours to kill), nothing is incomplete.
  ASSERT_TRUE(wait_for([&] { return kill(std::stoi(pid), 0) != 0; }, 15));
  EXPECT_TRUE(wait_for([&] { return info_trace(trace).incomplete_files == 0; }, 5));
  RunResult after = run({kStrata, "info", trace});
  EXPECT_EQ(after.out.find("still being written"), std::string::npos) << after.out;
}

// Two runs into one directory, the first still running: the second said
// "trace written (4 process files)" for its one file and named the first
// run's processes as its own, still running, after waiting for them.
TEST(Launcher, ARunCountsOnlyItsOwnFilesAndProcesses) {
  TempDir tmp;
  const std::string trace = tmp.sub("trace");
  // The first run starts no process while the second runs: a file added
  // meanwhile would be counted as the second's (the launcher cannot tell
  // whose a file of an ended process is).
  Child first = start({kStrata, "run", "-q", "-o", trace, "--", "/bin/sh", "-c", "exec sleep 20"});
  const std::string children = "/proc/" + std::to_string(first.pid) + "/task/" + std::to_string(first.pid) + "/children";
  ASSERT_TRUE(wait_for([&] {
    std::ifstream f(children);
    pid_t command = 0;
    return (f >> command) && read_text("/proc/" + std::to_string(command) + "/comm") == "sleep\n";
  }, 20));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the sleep image creates its file at start
  ASSERT_FALSE(listing(trace).empty());
  RunResult second = run({kStrata, "run", "-o", trace, "--", "/bin/true"});
  kill(first.pid, SIGTERM);  // forwarded to sleep
  RunResult r = finish(first, 30);
  EXPECT_EQ(r.code, 128 + SIGTERM) << r.err;
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(second.err.find("(1 process file)"), std::string::npos) << second.err;
  EXPECT_EQ(second.err.find("still running"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find(trace + " already held "), std::string::npos) << second.err;  // the first run's files
  // A fresh directory: no word of earlier files.
  RunResult fresh = run({kStrata, "run", "-o", tmp.sub("fresh"), "--", "/bin/true"});
  EXPECT_EQ(fresh.err.find("already held"), std::string::npos) << fresh.err;
}

// A descendant that ends a moment after the command (Python's multiprocessing
// resource tracker exits as the job's pipes close) is not reported: the
// launcher gives descendants half a second before it names them.
TEST(Launcher, ADescendantEndingJustAfterTheCommandIsNotReported) {
  TempDir tmp;
  const std::string trace = tmp.sub("trace"), pidf = tmp.sub("pid");
  const std::string script = "(sleep 0.2 >/dev/null 2>&1 </dev/null & echo $! > " + pidf + "); p=$(cat " + pidf +
                             "); i=0; while [ $i -lt 100 ] && ! ls " + trace + "/*-$p-*.strata >/dev/null 2>&1; do sleep 0.02; i=$((i+1)); done";
  RunResult r = run({kStrata, "run", "-o", trace, "--", "/bin/sh", "-c", script}, 30);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("still running"), std::string::npos) << r.err;
  EXPECT_EQ(info_trace(trace).incomplete_files, 0u);
}

// ---- JSON escaping ---------------------------------------------------------------------

std::string esc(std::string_view s) { return strata::json::quoted(s); }

TEST(JsonEscape, ValidUtf8PassesInvalidBytesBecomeLoneSurrogates) {
  EXPECT_EQ(esc("plain/path.txt"), "\"plain/path.txt\"");
  EXPECT_EQ(esc("q\"b\\s"), "\"q\\\"b\\\\s\"");
  EXPECT_EQ(esc(std::string("\n\t\r\b\f\x01\x1f\x7f", 8)), "\"\\n\\t\\r\\b\\f\\u0001\\u001f\x7f\"");
  EXPECT_EQ(esc(std::string("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_EQ(esc("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  EXPECT_EQ(esc("\xff\xfe-name"), "\"\\udcff\\udcfe-name\"");
  EXPECT_EQ(esc("\xc3"), "\"\\udcc3\"");                           // truncated
  EXPECT_EQ(esc("\xe2\x82"), "\"\\udce2\\udc82\"");                // truncated
  EXPECT_EQ(esc("\xc0\xaf"), "\"\\udcc0\\udcaf\"");                // overlong
  EXPECT_EQ(esc("\xe0\x80\xaf"), "\"\\udce0\\udc80\\udcaf\"");     // overlong
  EXPECT_EQ(esc("\xed\xa0\x80"), "\"\\udced\\udca0\\udc80\"");     // encoded surrogate
  EXPECT_EQ(esc("\xf4\x90\x80\x80"), "\"\\udcf4\\udc90\\udc80\\udc80\"");  // > U+10FFFF
  EXPECT_EQ(esc("\x80\xc3\xa9\xbf"), "\"\\udc80\xc3\xa9\\udcbf\"");
}

// Python's json + surrogateescape gives back every byte string exactly.
TEST(JsonEscape, LosslessThroughPythonSurrogateescape) {
  TempDir tmp;
  std::vector<std::string> cases;
  for (int b = 0; b < 256; ++b) cases.push_back(std::string(1, static_cast<char>(b)) + "x");
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int n = 0; n < 2000; ++n) {
    std::string s;
    size_t len = (seed >> 59) + 1;
    for (size_t i = 0; i < len; ++i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      unsigned v = static_cast<unsigned>(seed >> 56);
      // Bias towards UTF-8 lead and continuation bytes.
      s.push_back(static_cast<char>(v < 96 ? 0x80 | (v & 0x3f) : v < 160 ? 0xc0 | (v & 0x3f) : v));
    }
    cases.push_back(s);
  }
  std::string json, hex;
  static const char* kHex = "0123456789abcdef";
  for (auto& c : cases) {
    json += esc(c) + "\n";
    for (unsigned char b : c) {
      hex += kHex[b >> 4];
      hex += kHex[b & 15];
    }
    hex += "\n";
  }
  write_text(tmp.sub("in.json"), json);
  write_text(tmp.sub("in.hex"), hex);
  const char* py =
      "import json,sys\n"
      "a=open(sys.argv[1],'rb').read().decode('utf-8').split('\\n')[:-1]\n"
      "b=open(sys.argv[2]).read().split('\\n')[:-1]\n"
      "assert len(a)==len(b),(len(a),len(b))\n"
      "bad=[i for i,(x,h) in enumerate(zip(a,b)) if json.loads(x).encode('utf-8','surrogateescape')!=bytes.fromhex(h)]\n"
      "print('bad',bad[:10]) if bad else print('ok',len(a))\n"
      "sys.exit(1 if bad else 0)\n";
  RunResult r = run({PYTHON3, "-c", py, tmp.sub("in.json"), tmp.sub("in.hex")});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// A real program creating files with non-UTF-8 names, traced: every JSON
// output is valid UTF-8 JSON and gives the exact path bytes back.
TEST(JsonOutput, NonUtf8PathsRoundTripInEveryJsonWriter) {
  TempDir tmp;
  const std::string files = tmp.mkdir("files"), trace = tmp.sub("trace");
  RunResult r = strata_run(trace, {BADNAMES_BIN, files});
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> expected;
  static const char* kHex = "0123456789abcdef";
  for (std::string name : {"\xff\xfe-name", "\xc3", "\xc3\xa9-ok", "tab\there\x01\"q\\", "\xed\xa0\x80-surrogate",
                           "\xe2\x82", "\xc0\xaf-overlong"}) {
    std::string p = files + "/" + name, h;
    ASSERT_TRUE(fs::exists(p)) << name;
    for (unsigned char b : p) {
      h += kHex[b >> 4];
      h += kHex[b & 15];
    }
    expected.push_back(h);
  }
  auto check = [&](const std::string& mode, const std::string& file) {
    std::vector<std::string> argv = {PYTHON3, CHECK_JSON_PATHS, mode, file};
    argv.insert(argv.end(), expected.begin(), expected.end());
    RunResult c = run(argv, 60);
    EXPECT_EQ(c.code, 0) << mode << " " << file << ":\n" << c.out << c.err;
  };
  RunResult cat = run({kStrata, "cat", trace});
  ASSERT_EQ(cat.code, 0) << cat.err;
  write_text(tmp.sub("cat.jsonl"), cat.out);
  check("lines", tmp.sub("cat.jsonl"));

  RunResult an = run({kStrata, "analyze", trace, "--json"});
  ASSERT_EQ(an.code, 0) << an.err;
  write_text(tmp.sub("analyze.json"), an.out);
  check("doc", tmp.sub("analyze.json"));

  ASSERT_EQ(run({kStrata, "convert", trace, "--to", "chrome", "-o", tmp.sub("chrome.json")}).code, 0);
  check("doc", tmp.sub("chrome.json"));

  ASSERT_EQ(run({kStrata, "convert", trace, "--to", "pfw", "-o", tmp.sub("t.pfw")}).code, 0);
  check("pfw", tmp.sub("t.pfw"));
}

}  // namespace
