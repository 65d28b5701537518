// The REST server of `strata run --live` and `strata serve` (docs/live.md):
// cpp-httplib on 127.0.0.1 (or --listen), every request checked against a
// random token, the page and the /api endpoints over one trace directory.
//
//   live::ServerOptions o;  o.trace_dir = "t";
//   live::Server s(o);      // binds (throws ServerError), makes the token
//   s.start();              // serves in the background, writes t/.live/server
//   ... s.url() ...
//   s.stop();               // stops, removes t/.live/server
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

namespace strata::live {

struct ServerOptions {
  std::string trace_dir;
  std::string listen = "127.0.0.1";
  int port = 0;           // 0: a free port
  bool finished = false;  // `strata serve`: a finished trace (report page, no steering)
};

struct ServerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Seconds of history kept per process for GET /api/history, sampled once a second.
inline constexpr int kHistorySeconds = 600;

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void start();
  void stop();  // idempotent

  int port() const;
  const std::string& token() const;
  // http://ADDR:PORT/?token=TOKEN
  std::string url() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// 128 random bits from /dev/urandom as 32 hex digits. Throws ServerError.
std::string random_token();
// Equal strings, compared in time independent of where they differ.
bool same_token(const std::string& given, const std::string& expected);

}  // namespace strata::live
