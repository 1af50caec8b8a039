// recbole_serve: an HTTP/1.1 JSON server of top-K recommendations from a saved model, on
// cpp-httplib (Debian's libcpp-httplib-dev): serving/http_service.h behind flags and signals.
//
//   recbole_serve --checkpoint=PATH [--host=127.0.0.1] [--port=8080] [--threads=128]
//
//   GET  /recommend?user=196&k=10[&exclude_history=false]
//   POST /recommend  {"users": ["196", "186"], "k": 10}   or   {"history": ["242", "302"], "k": 10}
//   GET  /health     GET /model     POST /reload [{"checkpoint": "PATH"}]   (or SIGHUP)
//
// Shutdown: SIGTERM or SIGINT stops accepting; requests in flight are answered, then the process
// exits 0. SIGHUP or POST /reload loads the checkpoint again (or the one named) beside the
// serving model and swaps it in when it loaded; a checkpoint that fails to load leaves the old
// model serving.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "recbole/utils/error.h"
#include "serving/http_service.h"
#include "tool_flags.h"

namespace {

constexpr const char* kUsage =
    "usage: recbole_serve --checkpoint=PATH [--host=127.0.0.1] [--port=8080] [--threads=128]\n"
    "                     [--max_k=1000] [--max_users=1000] [--max_history=10000]\n"
    "                     [--max_body_bytes=1048576] [--max_queue=1024] [--max_wait_ms=1000]\n"
    "                     [--keep_alive_timeout=5] [--read_timeout=5] [--access_log=-]\n"
    "                     [--port_file=FILE] [--index=exact|ivf] [--nlist=0] [--nprobe=32]\n\n"
    "HTTP/1.1 JSON server of top-K recommendations from a best-model checkpoint of recbole_run.\n\n"
    "  GET  /recommend?user=U&k=K[&exclude_history=false]   one user's K best items\n"
    "  POST /recommend {\"users\": [...], \"k\": K}             several users (unknown ones "
    "listed)\n"
    "  POST /recommend {\"history\": [...], \"k\": K}           a new user given by item tokens\n"
    "                                              (EASE, SLIM, ItemKNN, the autoencoders,\n"
    "                                              sequential models: oldest item first)\n"
    "  GET  /health   GET /model   POST /reload [{\"checkpoint\": \"PATH\"}] (also SIGHUP)\n\n"
    "  --host, --port          where to listen (default 127.0.0.1:8080, loopback only; --port=0\n"
    "                          picks a free port)\n"
    "  --threads=N             connection worker threads (default 128): a connection holds one\n"
    "                          while open, more wait in a queue\n"
    "  --max_queue=N           connections waiting beyond which new ones are answered 503\n"
    "  --max_wait_ms=MS        a connection that waited longer is answered 503 (default 1000)\n"
    "  --max_k, --max_users, --max_history   request limits (400 above them)\n"
    "  --max_body_bytes=N      larger request bodies are answered 413 (default 1 MiB)\n"
    "  --keep_alive_timeout=S  idle keep-alive connections are closed after S seconds (5)\n"
    "  --read_timeout=S        a request must arrive within S seconds (5)\n"
    "  --access_log=-|FILE|off one line per request (default - : stderr)\n"
    "  --port_file=FILE        write the port listened on (useful with --port=0)\n"
    "  --index=exact|ivf       top-K of a factor model by scoring every item (default) or by\n"
    "                          an approximate IVF index (faiss; recbole_recommend\n"
    "                          --recall_users reports its recall)\n"
    "  --nlist=N --nprobe=N    the IVF index's cells (0: 4 sqrt(items)) and cells scanned per\n"
    "                          query (default 32)\n"
    "  --version               print the version\n\n"
    "Errors are JSON {\"error\": \"...\", \"status\": N}: 400 bad request, 404 unknown user or "
    "path,\n"
    "413 body too large, 503 overloaded. SIGTERM/SIGINT: graceful shutdown (requests in flight\n"
    "finish). SIGHUP: reload the checkpoint; a checkpoint that fails to load leaves the old model\n"
    "serving.\n";

// The service's options, and the file to write the port into.
struct Options {
  recbole::serving::HttpServiceOptions service;
  std::string port_file;
};

Options parse_args(int argc, char** argv) {
  Options options;
  recbole::serving::HttpServiceOptions& o = options.service;
  std::map<std::string, bool> seen;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
      throw recbole::ConfigError("unexpected argument \"" + arg + "\" (expected --key=value)");
    const std::string key = arg.substr(2, eq - 2), v = arg.substr(eq + 1);
    if (seen[key]) throw recbole::ConfigError("--" + key + " is given twice");
    seen[key] = true;
    if (key == "checkpoint")
      o.checkpoint = v;
    else if (key == "host")
      o.host = v;
    else if (key == "port")
      o.port = static_cast<int>(recbole::tools::int_flag(key, v, 0, 65535));
    else if (key == "threads")
      o.threads = static_cast<int>(recbole::tools::int_flag(key, v, 1, 4096));
    else if (key == "index")
      o.index.kind = v;
    else if (key == "nlist")
      o.index.nlist = recbole::tools::int_flag(key, v, 0, int64_t{1} << 24);
    else if (key == "nprobe")
      o.index.nprobe = recbole::tools::int_flag(key, v, 1, int64_t{1} << 24);
    else if (key == "max_k")
      o.max_k = recbole::tools::int_flag(key, v, 1, int64_t{1} << 30);
    else if (key == "max_users")
      o.max_users = recbole::tools::int_flag(key, v, 1, int64_t{1} << 30);
    else if (key == "max_history")
      o.max_history = recbole::tools::int_flag(key, v, 1, int64_t{1} << 30);
    else if (key == "max_body_bytes")
      o.max_body_bytes = recbole::tools::int_flag(key, v, 1, int64_t{1} << 34);
    else if (key == "max_queue")
      o.max_queue = recbole::tools::int_flag(key, v, 0, int64_t{1} << 30);
    else if (key == "max_wait_ms")
      o.max_wait_ms = recbole::tools::int_flag(key, v, 1, int64_t{1} << 30);
    else if (key == "keep_alive_timeout")
      o.keep_alive_timeout = static_cast<int>(recbole::tools::int_flag(key, v, 1, 3600));
    else if (key == "read_timeout")
      o.read_timeout = static_cast<int>(recbole::tools::int_flag(key, v, 1, 3600));
    else if (key == "access_log")
      o.access_log = v;
    else if (key == "port_file")
      options.port_file = v;
    else
      throw recbole::ConfigError("unknown option --" + key + " (see --help)");
  }
  if (o.checkpoint.empty()) throw recbole::ConfigError("--checkpoint=PATH is required");
  return options;
}

// Signals reach the process on whichever thread does not block them (libraries start threads
// of their own before main), so the handler only writes the signal's number into a pipe, and one
// thread of ours acts on it: SIGTERM / SIGINT stop the server, SIGHUP reloads.
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_signal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

void install_signal_handlers() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) throw recbole::Error("cannot create a pipe");
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

// Acts on the signals written into the pipe; returns when the server is stopped or 0 arrives
// (main's wake-up at the end).
void signal_loop(recbole::serving::HttpService& service) {
  for (;;) {
    unsigned char sig = 0;
    const ssize_t n = ::read(g_signal_pipe[0], &sig, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || sig == 0) return;
    if (sig == SIGHUP) {
      std::fprintf(stderr, "recbole_serve: SIGHUP: reloading\n");
      service.reload("");
      continue;
    }
    std::fprintf(stderr, "recbole_serve: %s: stopping (requests in flight finish)\n",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT");
    service.stop();
    return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (recbole::tools::answer_help_or_version(argc, argv, "recbole_serve", kUsage)) return 0;
  try {
    const Options options = parse_args(argc, argv);
    install_signal_handlers();
    // Room for many connections (the soft limit of open files up to the hard one).
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
      files.rlim_cur = files.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &files);
    }

    recbole::serving::HttpService service(options.service);
    const int port = service.bind();
    if (!options.port_file.empty()) {
      std::ofstream pf(options.port_file + ".tmp");
      pf << port << "\n";
      pf.close();
      std::rename((options.port_file + ".tmp").c_str(), options.port_file.c_str());
    }

    std::thread signals([&] { signal_loop(service); });
    const bool ok = service.listen();
    // The signal thread may still wait (the server stopped otherwise): wake it.
    const unsigned char zero = 0;
    [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe[1], &zero, 1);
    signals.join();
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "recbole_serve: error: %s\n", e.what());
    return 1;
  }
}
