#pragma once
// A small HTTP/1.1 server on 127.0.0.1 for the download tests: serves byte strings, honours
// (or ignores) Range and If-Range, and misbehaves on demand (error codes, bodies cut short,
// stalls, throttling). Counts requests and body bytes so tests can check what was fetched.
// One thread per connection; every connection is closed after one response.
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace recbole::testing {

struct Route {
  Route() = default;
  explicit Route(std::string route_body) : body(std::move(route_body)) {}
  std::string body;
  std::string etag;            // sent as ETag when not empty; If-Range is compared to it
  int status = 200;            // another code is answered with a short text body...
  int status_times = 1 << 30;  // ...for this many requests to the route, then 200
  bool ranges = true;          // honour "Range: bytes=N-"
  int64_t cut_at = -1;         // close the connection when the body reaches this offset...
  int cut_times = 1 << 30;     // ...for this many requests, then serve in full
  int64_t stall_at = -1;       // stop sending at this offset and wait for the client to go
  bool stall_before_headers = false;
  int chunk_delay_ms = 0;  // pause between 16 KiB chunks (throttling)
};

struct RequestLog {
  std::string target;  // as sent: "/x.zip", or "http://host/x.zip" through a proxy
  std::string range;   // the Range header's value, or ""
  int64_t body_bytes = 0;
};

class HttpTestServer {
 public:
  HttpTestServer();
  ~HttpTestServer();
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  void set(const std::string& path, Route route);
  int port() const { return port_; }
  std::string url(const std::string& path) const;

  // Requests to `path` so far, in arrival order (a proxy request counts under its path).
  std::vector<RequestLog> requests(const std::string& path) const;
  int64_t body_bytes(const std::string& path) const;

 private:
  void accept_loop();
  void serve(int fd);
  bool wait_for_client_to_leave(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  mutable std::mutex mutex_;
  std::vector<std::thread> connections_;
  std::map<std::string, Route> routes_;
  std::map<std::string, std::vector<RequestLog>> log_;
};

}  // namespace recbole::testing
