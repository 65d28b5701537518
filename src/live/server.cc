// cpp-httplib server of docs/live.md "REST API".
#include "live/server.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <httplib.h>
#include <simdjson.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "analysis/analyze.h"
#include "analysis/pass.h"
#include "format/json_escape.h"
#include "format/live.h"
#include "live/channel.h"
#include "live/counters_json.h"
#include "live/page.h"

namespace strata::live {
namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxBody = 64 * 1024;

std::string error_json(const std::string& what) { return "{\"error\": " + json::quoted(what) + "}"; }

void reply(httplib::Response& res, int status, const std::string& json) {
  res.status = status;
  res.set_content(json, "application/json");
}

// Paths and the one method each answers (GET also answers HEAD).
const std::map<std::string, std::string>& endpoints() {
  static const std::map<std::string, std::string> kEndpoints = {
      {"/", "GET"}, {"/api/status", "GET"}, {"/api/history", "GET"}, {"/api/counters", "GET"}, {"/api/mode", "POST"}};
  return kEndpoints;
}

struct ModeRequest {
  uint32_t mode = format::kNoMode;
  int64_t pid = 0;
  int64_t for_ns = 0;
};

// Parses {"mode": "trace", "pid": 123, "for_s": 30}; the error message when malformed.
std::string parse_mode_request(const std::string& body, ModeRequest& out) {
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  if (parser.parse(simdjson::padded_string(body)).get(root) != simdjson::SUCCESS)
    return "the body is not a JSON object: expected {\"mode\": \"off|profile|trace|smart\", \"pid\": P, \"for_s\": S}";
  bool have_mode = false;
  for (auto field : root) {
    const std::string key(field.key);
    if (key == "mode") {
      std::string_view name;
      if (field.value.get(name) != simdjson::SUCCESS) return "\"mode\" must be a string";
      out.mode = parse_mode(std::string(name));
      if (out.mode == format::kNoMode) return "unknown mode \"" + std::string(name) + "\": off, profile, trace or smart";
      have_mode = true;
    } else if (key == "pid") {
      int64_t pid = 0;
      if (field.value.get(pid) != simdjson::SUCCESS || pid <= 0) return "\"pid\" must be a positive integer";
      out.pid = pid;
    } else if (key == "for_s") {
      double seconds = 0;
      if (field.value.get(seconds) != simdjson::SUCCESS || !(seconds >= 0) || seconds > 1e9)
        return "\"for_s\" must be a number of seconds >= 0";
      out.for_ns = static_cast<int64_t>(seconds * 1e9);
    } else {
      return "unknown field \"" + key + "\": the fields are mode, pid and for_s";
    }
  }
  return have_mode ? "" : "\"mode\" is missing";
}

std::string pid_list(const std::vector<int64_t>& pids) {
  std::string s = "[";
  for (size_t i = 0; i < pids.size(); ++i) s += (i ? ", " : "") + std::to_string(pids[i]);
  return s + "]";
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

uint64_t wall_seconds() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

}  // namespace

std::string random_token() {
  unsigned char bytes[16];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  const bool ok = fd >= 0 && read(fd, bytes, sizeof bytes) == static_cast<ssize_t>(sizeof bytes);
  if (fd >= 0) close(fd);
  if (!ok) throw ServerError(std::string("cannot read /dev/urandom for the access token: ") + std::strerror(errno));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) token += {kHex[b >> 4], kHex[b & 15]};
  return token;
}

bool same_token(const std::string& given, const std::string& expected) {
  // Every byte of `expected` is compared whatever `given` holds, so the time
  // taken says nothing about how much of a guess was right.
  unsigned diff = given.size() != expected.size();
  for (size_t i = 0; i < expected.size(); ++i)
    diff |= static_cast<unsigned char>(expected[i]) ^ static_cast<unsigned char>(i < given.size() ? given[i] : 0);
  return diff == 0;
}

struct Server::Impl {
  ServerOptions o;
  std::string token;
  httplib::Server http;
  int port = 0;
  std::string page;
  std::string server_file;
  bool created_live_dir = false;
  bool started = false;
  std::thread listener, sampler;

  std::mutex mu;  // guards everything below
  std::condition_variable wake_sampler;
  bool stopping = false;
  std::unique_ptr<Channel> channel;  // live traces
  std::map<int64_t, std::deque<std::array<uint64_t, 4>>> history;
  analysis::Job job;  // finished traces
  std::string finished_status;

  explicit Impl(ServerOptions options) : o(std::move(options)), token(random_token()) {
    while (o.trace_dir.size() > 1 && o.trace_dir.back() == '/') o.trace_dir.pop_back();
    if (o.finished) load_finished();
    else channel = std::make_unique<Channel>(o.trace_dir);
    if (!o.finished) page = live_page(token);
    routes();
    http.set_payload_max_length(kMaxBody);
    http.set_read_timeout(5, 0);
    http.set_write_timeout(5, 0);
    if (o.port == 0) {
      port = http.bind_to_any_port(o.listen);
    } else {
      port = http.bind_to_port(o.listen, o.port) ? o.port : -1;
    }
    if (port <= 0)
      throw ServerError("cannot listen on " + o.listen + ":" + std::to_string(o.port) +
                        (errno ? std::string(": ") + std::strerror(errno) : std::string()));
  }

  void load_finished() {
    analysis::AnalyzeOptions opts;
    opts.input = o.trace_dir;
    opts.html = "-";  // a page is drawn: the passes keep what only the page shows (timeline lanes)
    std::ostringstream html, err;
    bool drawn = false;
    try {
      // The page from the passes' own states, as `strata analyze --html`
      // draws it: a page drawn from the job alone had no timeline lanes and
      // no DataLoader worker names.
      const analysis::Analysis a = analysis::run_passes(opts);
      job = a.job();
      drawn = a.write_html(html, err);
    } catch (const std::exception& e) {
      throw ServerError(e.what());  // names the trace and what is wrong
    }
    // Without the charting library there is no report page, but the API
    // still serves: the page says why.
    page = drawn ? html.str()
                 : "<!doctype html><html><head><meta charset=\"utf-8\"><title>strata serve</title></head><body><p>" +
                       html_escape(err.str()) + "</p></body></html>";
    // The final mode of each process, when the trace was live.
    std::map<int64_t, std::string> modes;
    std::error_code ec;
    if (fs::is_directory(o.trace_dir + "/" + format::kLiveDirName, ec)) {
      Channel c(o.trace_dir, [](const std::string&) {});
      for (auto& p : c.processes()) modes[p.pid] = p.mode;
    }
    std::string s = "{\"live\": false, \"trace\": " + json::quoted(o.trace_dir) + ", \"job\": null, \"processes\": [";
    for (size_t i = 0; i < job.procs.size(); ++i) {
      const auto& p = job.procs[i];
      auto mode = modes.find(p.meta.pid);
      // A profile-mode process wrote counters, not events: its bytes are theirs.
      int64_t read = p.bytes_read, written = p.bytes_written;
      if (read == 0 && written == 0)
        for (const auto& [path, r] : p.posix) {
          read += r.counters[counters::POSIX_BYTES_READ];
          written += r.counters[counters::POSIX_BYTES_WRITTEN];
        }
      s += (i ? ", " : "") + std::string("{\"pid\": ") + std::to_string(p.meta.pid) +
           ", \"ppid\": " + std::to_string(p.meta.ppid) + ", \"command\": " + json::quoted(p.meta.cmdline) +
           ", \"host\": " + json::quoted(p.meta.host) + ", \"state\": \"exited\", \"mode\": " +
           (mode == modes.end() ? std::string("null") : "\"" + mode->second + "\"") +
           ", \"events\": " + std::to_string(p.events) + ", \"events_per_s\": 0, \"read_bytes\": " +
           std::to_string(read) + ", \"written_bytes\": " + std::to_string(written) +
           ", \"read_bytes_per_s\": 0, \"written_bytes_per_s\": 0, \"dropped\": 0, \"open_files\": [], \"tags\": {}}";
    }
    finished_status = s + "]}";
  }

  // 401 without a token, 403 with a wrong one, then 404/405 for what no
  // endpoint answers; Unhandled lets the route run.
  httplib::Server::HandlerResponse check(const httplib::Request& req, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_header("Referrer-Policy", "no-referrer");
    res.set_header("X-Content-Type-Options", "nosniff");
    std::string given;
    const std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0) given = auth.substr(7);
    else if (req.has_param("token")) given = req.get_param_value("token");
    if (given.empty()) {
      res.set_header("WWW-Authenticate", "Bearer");
      reply(res, 401, error_json("missing token: send Authorization: Bearer TOKEN or ?token=TOKEN"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!same_token(given, token)) {
      reply(res, 403, error_json("wrong token"));
      return httplib::Server::HandlerResponse::Handled;
    }
    auto endpoint = endpoints().find(req.path);
    if (endpoint == endpoints().end()) {
      reply(res, 404, error_json("no such endpoint: " + req.path));
      return httplib::Server::HandlerResponse::Handled;
    }
    const bool allowed = req.method == endpoint->second || (endpoint->second == "GET" && req.method == "HEAD");
    if (!allowed) {
      res.set_header("Allow", endpoint->second);
      reply(res, 405, error_json(req.path + " answers " + endpoint->second + " only"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  void routes() {
    http.set_pre_routing_handler([this](const auto& req, auto& res) {
      // Answers go uncompressed: Debian's cpp-httplib compresses with brotli
      // at its slowest setting (1-2 s for the 244 KB page), and over loopback
      // compression saves nothing. The library decides from this header only;
      // the request object is httplib's own, not const.
      const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
      return check(req, res);
    });
    http.Get("/", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(page, "text/html; charset=utf-8");
    });
    http.Get("/api/status", [this](const httplib::Request&, httplib::Response& res) {
      if (o.finished) return reply(res, 200, finished_status);
      std::lock_guard lock(mu);
      reply(res, 200, channel->status_json());
    });
    http.Get("/api/history", [this](const httplib::Request&, httplib::Response& res) {
      reply(res, 200, history_json());
    });
    http.Get("/api/counters", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string prefix = req.get_param_value("path");
      if (o.finished) return reply(res, 200, counters_json(job, prefix));
      try {
        // A channel of its own: the 2 s wait for snapshots holds up no other request.
        Channel(o.trace_dir, [](const std::string&) {}).request_snapshot(2000);
        reply(res, 200, trace_counters_json(o.trace_dir, prefix));
      } catch (const std::exception& e) {
        reply(res, 500, error_json(o.trace_dir + ": cannot read the counters: " + e.what()));
      }
    });
    http.Post("/api/mode", [this](const httplib::Request& req, httplib::Response& res) { switch_mode(req, res); });
  }

  void switch_mode(const httplib::Request& req, httplib::Response& res) {
    if (o.finished) return reply(res, 409, error_json(o.trace_dir + " is a finished trace: there is nothing to switch"));
    ModeRequest m;
    if (std::string why = parse_mode_request(req.body, m); !why.empty()) return reply(res, 400, error_json(why));
    try {
      std::lock_guard lock(mu);
      SwitchResult r = channel->request_mode(m.mode, m.pid, m.for_ns);
      reply(res, 200, "{\"switched\": " + pid_list(r.switched) + ", \"pending\": " + pid_list(r.pending) + "}");
    } catch (const ChannelError& e) {
      reply(res, 404, error_json(e.what()));
    }
  }

  std::string history_json() {
    std::lock_guard lock(mu);
    std::string s = "{\"interval_s\": 1, \"series\": {";
    bool first = true;
    for (const auto& [pid, samples] : history) {
      s += (first ? "\"" : ", \"") + std::to_string(pid) + "\": [";
      first = false;
      for (size_t i = 0; i < samples.size(); ++i) {
        const auto& v = samples[i];
        s += (i ? ", [" : "[") + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) +
             ", " + std::to_string(v[3]) + "]";
      }
      s += "]";
    }
    return s + "}}";
  }

  void sample() {
    const uint64_t now = wall_seconds();
    for (const ProcessStatus& p : channel->processes()) {
      if (p.state != "running") continue;
      auto& series = history[p.pid];
      if (!series.empty() && series.back()[0] == now) series.pop_back();  // an exec'd image: its newest slot wins
      series.push_back({now, p.events_per_s, p.read_bytes_per_s, p.written_bytes_per_s});
    }
    // Older samples go, and with them the series of processes gone for 10 minutes.
    for (auto it = history.begin(); it != history.end();) {
      auto& series = it->second;
      while (!series.empty() && series.front()[0] + kHistorySeconds < now) series.pop_front();
      it = series.empty() ? history.erase(it) : std::next(it);
    }
  }

  void sample_loop() {
    std::unique_lock lock(mu);
    while (!stopping) {
      sample();
      wake_sampler.wait_for(lock, std::chrono::seconds(1), [this] { return stopping; });
    }
  }

  void write_server_file() {
    const std::string live = o.trace_dir + "/" + format::kLiveDirName;
    std::error_code ec;
    if (!fs::is_directory(live, ec)) {
      if (mkdir(live.c_str(), 0700) != 0)
        throw ServerError(live + ": cannot create it: " + std::strerror(errno));
      created_live_dir = true;
    }
    server_file = live + "/server";
    int fd = open(server_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw ServerError(server_file + ": cannot write it: " + std::strerror(errno));
    fchmod(fd, 0600);
    const std::string text = url() + "\n" + token + "\n" + std::to_string(getpid()) + "\n";
    const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    if (!ok) throw ServerError(server_file + ": cannot write it: " + std::strerror(errno));
  }

  std::string url() const {
    const std::string host = o.listen.find(':') != std::string::npos ? "[" + o.listen + "]" : o.listen;
    return "http://" + host + ":" + std::to_string(port) + "/?token=" + token;
  }
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() { stop(); }

void Server::start() {
  Impl& s = *impl_;
  if (s.started) return;
  s.write_server_file();
  s.started = true;
  s.listener = std::thread([&s] { s.http.listen_after_bind(); });
  // stop() is a no-op on a server not yet listening: wait (bounded) until it is.
  for (int i = 0; i < 5000 && !s.http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!s.o.finished) s.sampler = std::thread([&s] { s.sample_loop(); });
}

void Server::stop() {
  Impl& s = *impl_;
  if (!s.started) return;
  s.started = false;
  {
    std::lock_guard lock(s.mu);
    s.stopping = true;
  }
  s.wake_sampler.notify_all();
  s.http.stop();
  if (s.listener.joinable()) s.listener.join();
  if (s.sampler.joinable()) s.sampler.join();
  std::error_code ec;
  fs::remove(s.server_file, ec);
  if (s.created_live_dir) fs::remove(s.o.trace_dir + "/" + format::kLiveDirName, ec);
}

int Server::port() const { return impl_->port; }
const std::string& Server::token() const { return impl_->token; }
std::string Server::url() const { return impl_->url(); }

}  // namespace strata::live
