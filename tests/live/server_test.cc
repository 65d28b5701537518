// The live REST server (src/live/server.*) over slot files written by the
// test, through a real HTTP client (cpp-httplib's): the token on every
// endpoint, the server file, status, history, mode requests and bad requests.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../common/process.h"
#include "live/channel.h"
#include "live/server.h"
#include "slot_files.h"

namespace {

namespace fs = std::filesystem;
using strata::format::LiveMode;

struct LiveServer {
  strata_test::TempDir tmp{"strata-live"};
  std::unique_ptr<strata_test::SlotFile> slot;
  std::unique_ptr<strata::live::Server> server;
  LiveServer() {
    strata::live::create_channel(tmp.path(), static_cast<uint32_t>(LiveMode::kProfile));
    slot = std::make_unique<strata_test::SlotFile>(tmp.path(), getpid(), "python3 loop.py");
    slot->operator->()->events_per_s.store(42);
    strata::live::ServerOptions o;
    o.trace_dir = tmp.path();
    server = std::make_unique<strata::live::Server>(o);
    server->start();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server->port());
    c.set_connection_timeout(5, 0);
    c.set_read_timeout(10, 0);
    return c;
  }
  httplib::Headers auth() const { return {{"Authorization", "Bearer " + server->token()}}; }
};

int status_of(httplib::Result r) { return r ? r->status : -1; }

TEST(LiveServer, EveryEndpointNeedsTheToken) {
  LiveServer s;
  auto c = s.client();
  const std::string wrong(32, '0');
  for (const std::string path : {"/", "/api/status", "/api/history", "/api/counters", "/api/mode", "/nope"}) {
    SCOPED_TRACE(path);
    EXPECT_EQ(status_of(c.Get(path)), 401);
    EXPECT_EQ(status_of(c.Post(path, "{\"mode\": \"off\"}", "application/json")), 401);
    EXPECT_EQ(status_of(c.Get(path, {{"Authorization", "Bearer " + wrong}})), 403);
    EXPECT_EQ(status_of(c.Get(path + "?token=" + wrong)), 403);
    EXPECT_EQ(status_of(c.Get(path + "?token=" + s.server->token().substr(0, 31))), 403);
    EXPECT_EQ(status_of(c.Post(path, {{"Authorization", "Bearer " + wrong}}, "{\"mode\": \"off\"}", "application/json")),
              403);
  }
  auto r = c.Get("/api/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, R"({"error": "missing token: send Authorization: Bearer TOKEN or ?token=TOKEN"})");
  // Nothing reached the process.
  EXPECT_EQ(s.slot->operator->()->request_seq.load(), 0u);
}

TEST(LiveServer, TokenIs128RandomBits) {
  const std::string a = strata::live::random_token(), b = strata::live::random_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
  EXPECT_TRUE(strata::live::same_token(a, a));
  EXPECT_FALSE(strata::live::same_token(a.substr(0, 31), a));
  EXPECT_FALSE(strata::live::same_token(a + "0", a));
  EXPECT_FALSE(strata::live::same_token("", a));
}

TEST(LiveServer, WritesTheServerFileWhileServing) {
  LiveServer s;
  const std::string file = s.tmp.path() + "/.live/server";
  struct stat st{};
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(file);
  std::string url, token, pid;
  std::getline(in, url);
  std::getline(in, token);
  std::getline(in, pid);
  EXPECT_EQ(url, "http://127.0.0.1:" + std::to_string(s.server->port()) + "/?token=" + s.server->token());
  EXPECT_EQ(url, s.server->url());
  EXPECT_EQ(token, s.server->token());
  EXPECT_EQ(pid, std::to_string(getpid()));
  s.server->stop();
  EXPECT_FALSE(fs::exists(file));
  EXPECT_TRUE(fs::exists(s.tmp.path() + "/.live/job")) << "stopping removes its own file only";
}

TEST(LiveServer, PageHasEveryPlaceholderFilled) {
  LiveServer s;
  auto c = s.client();
  auto r = c.Get("/?token=" + s.server->token());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  // Every placeholder filled (the page may also read the token from its URL).
  EXPECT_EQ(r->body.find("__STRATA_TOKEN__"), std::string::npos);
  EXPECT_EQ(r->body.find("/*STRATA_LIVE_CSS*/"), std::string::npos);
  EXPECT_EQ(r->body.find("/*STRATA_LIVE_JS*/"), std::string::npos);
  EXPECT_EQ(r->body.find("/*STRATA_CHART_JS*/"), std::string::npos);
}

TEST(LiveServer, StatusAndHistory) {
  LiveServer s;
  auto c = s.client();
  auto r = c.Get("/api/status", s.auth());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("\"live\": true, "), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("\"job\": {\"mode\": \"profile\"}"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("{\"pid\": " + std::to_string(getpid()) + ", "), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("\"command\": \"python3 loop.py\""), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("\"events_per_s\": 42, "), std::string::npos) << r->body;
  // The sampler takes one sample a second: two within 3 s.
  std::string history;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  size_t samples = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    auto h = c.Get("/api/history", s.auth());
    ASSERT_TRUE(h);
    history = h->body;
    samples = 0;
    for (size_t at = history.find(", 42, 0, 0]"); at != std::string::npos; at = history.find(", 42, 0, 0]", at + 1))
      ++samples;
    if (samples >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(samples, 2u) << history;
  EXPECT_EQ(history.rfind("{\"interval_s\": 1, \"series\": {\"" + std::to_string(getpid()) + "\": [[", 0), 0u) << history;
}

TEST(LiveServer, CountersBeforeAnyTraceFileAreEmpty) {
  LiveServer s;
  auto c = s.client();
  auto r = c.Get("/api/counters?path=/data", s.auth());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "{\"files\": [\n]}");
  // The running process was asked for a snapshot.
  EXPECT_EQ(s.slot->operator->()->snapshot_seq.load(), 1u);
}

TEST(LiveServer, ModeRequests) {
  LiveServer s;
  auto c = s.client();
  auto post = [&](const std::string& body) { return c.Post("/api/mode", s.auth(), body, "application/json"); };
  struct Bad {
    std::string body;
    int status;
    std::string error;
  };
  const std::vector<Bad> bad = {
      {"{\"mode\": ", 400, "the body is not a JSON object"},
      {"[1, 2]", 400, "the body is not a JSON object"},
      {"{\"mode\": \"fast\"}", 400, "unknown mode \\\"fast\\\": off, profile, trace or smart"},
      {"{\"mode\": 2}", 400, "\\\"mode\\\" must be a string"},
      {"{\"pid\": 1}", 400, "\\\"mode\\\" is missing"},
      {"{\"mode\": \"trace\", \"pid\": -4}", 400, "\\\"pid\\\" must be a positive integer"},
      {"{\"mode\": \"trace\", \"for_s\": \"soon\"}", 400, "\\\"for_s\\\" must be a number of seconds >= 0"},
      {"{\"mode\": \"trace\", \"pids\": [1]}", 400, "unknown field \\\"pids\\\""},
      {"{\"mode\": \"trace\", \"pid\": 999999999}", 404, "no running process with pid 999999999"},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.body);
    auto r = post(b.body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, b.status);
    EXPECT_EQ(r->body.rfind("{\"error\": \"", 0), 0u) << r->body;
    EXPECT_NE(r->body.find(b.error), std::string::npos) << r->body;
  }
  auto big = post("{\"mode\": \"trace\", \"x\": \"" + std::string(100000, 'a') + "\"}");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(s.slot->operator->()->request_seq.load(), 0u) << "no bad request reached the process";

  auto wrong_method = c.Get("/api/mode", s.auth());
  ASSERT_TRUE(wrong_method);
  EXPECT_EQ(wrong_method->status, 405);
  EXPECT_EQ(wrong_method->get_header_value("Allow"), "POST");
  auto missing = c.Get("/etc/passwd", s.auth());
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);

  // Nobody answers in this test: the request is stored and the pid pending.
  auto ok = post("{\"mode\": \"trace\", \"pid\": " + std::to_string(getpid()) + ", \"for_s\": 2}");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "{\"switched\": [], \"pending\": [" + std::to_string(getpid()) + "]}");
  EXPECT_EQ(s.slot->operator->()->request_seq.load(), 1u);
  EXPECT_EQ(s.slot->operator->()->requested_mode.load(), static_cast<uint32_t>(LiveMode::kTrace));
  EXPECT_EQ(s.slot->operator->()->revert_after_ns.load(), 2'000'000'000u);
}

}  // namespace
