#pragma once
// HttpService: an HTTP/1.1 JSON server of top-K recommendations from a saved model, on
// cpp-httplib (Debian's libcpp-httplib-dev). recbole_serve is this class behind flags and
// signals; a program or a test can run it in-process.
//
//   GET  /recommend?user=196&k=10[&exclude_history=false]
//   POST /recommend  {"users": ["196", "186"], "k": 10}   or   {"history": ["242", "302"], "k": 10}
//   GET  /health     GET /model     POST /reload [{"checkpoint": "PATH"}]
//
// Errors are JSON {"error": "...", "status": N}: 400 bad request, 404 unknown user or path,
// 413 body too large, 414 URI too long, 503 overloaded.
//
// Threads: cpp-httplib gives each open connection a worker thread for as long as it stays open
// (keep-alive), so `threads` bounds the connections served at once; more wait in a queue, and
// a connection that waited longer than max_wait_ms, or found more than max_queue waiting, has
// its first request answered 503. Scoring runs on the connection's thread, exact (the CPU
// kernels of serving/recommender.h) or by the item index asked for.
//
// Reload: reload() (POST /reload, SIGHUP in recbole_serve) loads the checkpoint again (or the
// one named) beside the serving model and swaps it in when it loaded; requests never wait for a
// reload, and a checkpoint that fails to load leaves the old model serving.
//
// Stop: stop() stops accepting; requests in flight are answered, then listen() returns.
//
// The definitions are built only when recbole-cpp is built with cpp-httplib (as recbole_serve
// is); this header needs no cpp-httplib. Log lines (load, reloads, listening, stopped) go to
// stderr prefixed "recbole_serve: "; the access log as HttpServiceOptions::access_log says.
#include <cstdint>
#include <memory>
#include <string>

#include "serving/item_index.h"

namespace recbole::serving {

struct HttpServiceOptions {
  std::string checkpoint;          // the best-model checkpoint served (recbole_run's saved/*.pth)
  std::string host = "127.0.0.1";  // loopback only by default
  int port = 8080;                 // 0: a free port, chosen at bind() (port() tells which)
  int threads = 128;               // connection worker threads
  // Request limits: above them, 400.
  int64_t max_k = 1000, max_users = 1000, max_history = 10000;
  int64_t max_body_bytes = 1 << 20;  // larger bodies are answered 413
  int64_t max_queue = 1024;          // connections waiting beyond which new ones get 503
  int64_t max_wait_ms = 1000;        // a connection that waited longer gets 503
  int keep_alive_timeout = 5;        // seconds an idle keep-alive connection stays open
  int read_timeout = 5;              // seconds a request (and a response write) may take
  std::string access_log = "-";      // one line per request: "-" stderr, "off", or a file path
  ItemIndexOptions index;            // the top-K index of a factor model (also on reloads)
};

class HttpService {
 public:
  // Loads the checkpoint (logs its summary), opens the access log and sets up the routes;
  // listens nowhere yet. Throws recbole::Error when the checkpoint does not load or the access
  // log cannot be opened. Sets the process's BLAS to one thread (requests score on their own
  // threads).
  explicit HttpService(HttpServiceOptions options);
  // Call stop() and wait for listen() to return before destroying a service that listens.
  ~HttpService();
  HttpService(const HttpService&) = delete;
  HttpService& operator=(const HttpService&) = delete;

  // Binds host:port (port 0: a free one) and returns the port bound. Throws recbole::Error when
  // it cannot ("in use, or not an address of this machine").
  int bind();
  // The port bound; 0 before bind().
  int port() const;

  // Serves until stop() (binds first when bind() was not called); blocks. Returns false when the
  // server failed, true when it was stopped. Once per service.
  bool listen();
  // Stops accepting and makes listen() return once the requests in flight are answered. Safe
  // from any thread (not from a signal handler), before or during listen(), more than once.
  void stop();

  // Loads `path` (empty: the serving checkpoint) and swaps it in; the old model serves until
  // then and stays when loading fails. Returns the error message, or "" when reloaded.
  std::string reload(const std::string& path);

  // Connections answered 503 because the server was overloaded, so far.
  int64_t shed_count() const;

  const HttpServiceOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace recbole::serving
