// The HTTP service: the endpoints on cpp-httplib, its worker pool and access log (see the
// header). Compiled only when cpp-httplib is found (CMakeLists.txt).
#include "serving/http_service.h"

#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "recbole/utils/error.h"
#include "recbole/utils/memory.h"
#include "recbole/utils/thread_pool.h"
#include "serving/output.h"
#include "serving/recommender.h"

namespace recbole::serving {
namespace {

using recbole::Recommender;
using Clock = std::chrono::steady_clock;

// Requests run on the server's threads, one each; the index as asked (also on reloads).
recbole::RecommenderOptions recommender_options(const HttpServiceOptions& o) {
  recbole::RecommenderOptions ro;
  ro.num_threads = 1;
  ro.index = o.index;
  return ro;
}

std::string iso_time(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[80];  // room for any int the compiler cannot bound (-Wformat-truncation)
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string iso_time_of(int64_t unix_seconds) {
  return iso_time(std::chrono::system_clock::from_time_t(static_cast<std::time_t>(unix_seconds)));
}

// ---- Per-thread request state (a worker serves one connection at a time) ----
thread_local Clock::time_point t_request_start;
thread_local bool t_request_timed = false;
// The connection this thread serves waited too long (or found the queue full): its first
// request is answered 503.
thread_local bool t_shed = false;

// The worker pool of the server's connections: `threads` workers, and connections that found
// more than max_queue waiting or waited longer than max_wait are marked to be shed.
class ConnectionPool : public httplib::TaskQueue {
 public:
  ConnectionPool(int threads, int64_t max_queue, int64_t max_wait_ms)
      : max_queue_(max_queue), max_wait_(std::chrono::milliseconds(max_wait_ms)) {
    for (int t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const bool over = static_cast<int64_t>(jobs_.size()) >= max_queue_;
      jobs_.push_back({std::move(fn), Clock::now(), over});
    }
    cv_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }

 private:
  struct Job {
    std::function<void()> fn;
    Clock::time_point queued;
    bool over;
  };
  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, nothing left
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      t_shed = job.over || Clock::now() - job.queued > max_wait_;
      job.fn();
      t_shed = false;
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  int64_t max_queue_;
  Clock::duration max_wait_;
  std::vector<std::thread> workers_;
};

// The access log: one line per request.
class AccessLog {
 public:
  explicit AccessLog(const std::string& where) {
    if (where == "off") return;
    if (where == "-") {
      out_ = stderr;
      return;
    }
    out_ = std::fopen(where.c_str(), "a");
    if (!out_) throw recbole::Error("--access_log: cannot open " + where);
    owned_ = true;
  }
  ~AccessLog() {
    if (owned_) std::fclose(out_);
  }
  void write(const httplib::Request& req, const httplib::Response& res) {
    if (!out_) return;
    std::string line = iso_time(std::chrono::system_clock::now());
    line += ' ';
    line += req.remote_addr.empty() ? "-" : req.remote_addr;
    line += " \"";
    line += req.method.empty() ? "-" : req.method;
    line += ' ';
    // The target as received, cut and without control characters (a log line stays one line).
    const std::string& target = req.target.empty() ? req.path : req.target;
    for (size_t k = 0; k < target.size() && k < 512; ++k)
      line += static_cast<unsigned char>(target[k]) < 0x20 ? '?' : target[k];
    line += "\" ";
    line += std::to_string(res.status);
    line += ' ';
    line += std::to_string(res.body.size());
    if (t_request_timed) {
      line += ' ';
      line += std::to_string(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t_request_start)
              .count());
      line += "us";
    } else {
      line += " -";
    }
    line += '\n';
    std::lock_guard<std::mutex> lock(mutex_);
    std::fwrite(line.data(), 1, line.size(), out_);
    if (owned_ || out_ == stderr) std::fflush(out_);
  }

 private:
  std::FILE* out_ = nullptr;
  bool owned_ = false;
  std::mutex mutex_;
};

// httplib::Server with the listening socket exposed (to raise the accept backlog).
class Server : public httplib::Server {
 public:
  int listening_socket() const { return svr_sock_; }
};

// The endpoints, and the model they serve (swapped whole by a reload).
class Endpoints {
 public:
  Endpoints(HttpServiceOptions o, std::shared_ptr<const Recommender> model)
      : options_(std::move(o)), model_(std::move(model)), started_(Clock::now()) {}

  std::shared_ptr<const Recommender> model() const { return std::atomic_load(&model_); }

  // Loads `path` (or the current checkpoint) and swaps it in; the old model serves until then
  // and stays when loading fails. Returns the error, or "" when reloaded.
  std::string reload(const std::string& path_or_empty) {
    std::lock_guard<std::mutex> lock(reload_mutex_);
    const std::string path = path_or_empty.empty() ? model()->info().path : path_or_empty;
    try {
      std::shared_ptr<const Recommender> fresh =
          Recommender::load(path, recommender_options(options_));
      std::atomic_store(&model_, fresh);
      ++reloads_;
      std::fprintf(stderr, "recbole_serve: reloaded %s (%s, %.2f s)\n", path.c_str(),
                   fresh->info().model.c_str(), fresh->info().load_seconds);
      return "";
    } catch (const std::exception& e) {
      ++failed_reloads_;
      std::fprintf(stderr, "recbole_serve: reload of %s failed, the old model keeps serving: %s\n",
                   path.c_str(), e.what());
      return e.what();
    }
  }

  static void json_error(httplib::Response& res, int status, const std::string& message) {
    std::string body = "{\"error\":";
    recbole::serving::append_json_string(body, message);
    body += ",\"status\":";
    body += std::to_string(status);
    body += "}\n";
    res.status = status;
    res.set_content(body, "application/json");
  }

  // k from text: an integer in [1, max_k].
  std::optional<int64_t> parse_k(const std::string& text) const {
    int64_t k = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), k);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size() || k < 1 || k > options_.max_k)
      return std::nullopt;
    return k;
  }
  std::string k_message(const std::string& got) const {
    return "k must be an integer in [1, " + std::to_string(options_.max_k) + "], got \"" +
           got.substr(0, 64) + "\"";
  }

  void get_recommend(const httplib::Request& req, httplib::Response& res) const {
    for (const auto& [key, value] : req.params)
      if (key != "user" && key != "k" && key != "exclude_history")
        return json_error(
            res, 400,
            "unknown parameter \"" + key.substr(0, 64) + "\" (expected user, k, exclude_history)");
    if (req.get_param_value_count("user") != 1)
      return json_error(res, 400, "give exactly one user: /recommend?user=TOKEN&k=10");
    if (req.get_param_value_count("k") > 1 || req.get_param_value_count("exclude_history") > 1)
      return json_error(res, 400, "k and exclude_history may be given once");
    int64_t k = 10;
    if (req.has_param("k")) {
      const auto parsed = parse_k(req.get_param_value("k"));
      if (!parsed) return json_error(res, 400, k_message(req.get_param_value("k")));
      k = *parsed;
    }
    bool exclude = true;
    if (req.has_param("exclude_history")) {
      const std::string v = req.get_param_value("exclude_history");
      if (v != "true" && v != "false")
        return json_error(res, 400, "exclude_history must be true or false");
      exclude = v == "true";
    }
    const std::string user = req.get_param_value("user");
    const auto m = model();
    const int32_t id = m->user_id(user);
    if (id < 0) return json_error(res, 404, "unknown user \"" + user.substr(0, 256) + "\"");
    std::vector<Recommender::IdList> lists;
    m->recommend_ids({id}, k, exclude, &lists);
    std::string body = "{\"user\":";
    recbole::serving::append_json_string(body, user);
    body += ",\"k\":" + std::to_string(k) + ",\"items\":";
    append_items(body, *m, lists[0]);
    body += "}\n";
    res.set_content(body, "application/json");
  }

  static void append_items(std::string& body, const Recommender& m, const Recommender::IdList& l) {
    body += '[';
    for (size_t j = 0; j < l.size(); ++j) {
      if (j > 0) body += ',';
      body += "{\"item\":";
      recbole::serving::append_json_string(body, m.item_token(l[j].first));
      body += ",\"score\":";
      recbole::serving::append_score(body, l[j].second);
      body += '}';
    }
    body += ']';
  }

  // A token from JSON: a string, or an integer (written as the dataset's token would be).
  static std::optional<std::string> token_of(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return v.dump();
    return std::nullopt;
  }

  void post_recommend(const httplib::Request& req, httplib::Response& res) const {
    const nlohmann::json body =
        nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) return json_error(res, 400, "the body is not valid JSON");
    if (!body.is_object())
      return json_error(res, 400, "the body must be a JSON object: {\"users\": [...], \"k\": 10}");
    for (const auto& [key, value] : body.items())
      if (key != "users" && key != "user" && key != "history" && key != "k" &&
          key != "exclude_history")
        return json_error(res, 400,
                          "unknown field \"" + key.substr(0, 64) +
                              "\" (expected users, user, history, k, exclude_history)");
    const int given = body.contains("users") + body.contains("user") + body.contains("history");
    if (given != 1)
      return json_error(res, 400, "give exactly one of \"users\", \"user\" and \"history\"");
    int64_t k = 10;
    if (body.contains("k")) {
      const nlohmann::json& kv = body["k"];
      if (!kv.is_number_integer()) return json_error(res, 400, k_message(kv.dump()));
      const auto parsed = parse_k(kv.dump());
      if (!parsed) return json_error(res, 400, k_message(kv.dump()));
      k = *parsed;
    }
    bool exclude = true;
    if (body.contains("exclude_history")) {
      if (!body["exclude_history"].is_boolean())
        return json_error(res, 400, "exclude_history must be true or false");
      exclude = body["exclude_history"].get<bool>();
    }
    const auto m = model();
    if (body.contains("history")) {
      const nlohmann::json& h = body["history"];
      if (!h.is_array()) return json_error(res, 400, "\"history\" must be an array of item tokens");
      if (static_cast<int64_t>(h.size()) > options_.max_history)
        return json_error(res, 400,
                          "\"history\" holds " + std::to_string(h.size()) + " items; at most " +
                              std::to_string(options_.max_history));
      if (!m->can_recommend_from_history())
        return json_error(res, 400,
                          m->info().model +
                              " cannot recommend from an item history (its scores need the "
                              "user's own parameters or features); ask for known users instead");
      std::vector<std::string> tokens;
      for (const auto& v : h) {
        const auto t = token_of(v);
        if (!t) return json_error(res, 400, "\"history\" must hold item tokens (strings)");
        tokens.push_back(*t);
      }
      std::vector<std::string> unknown;
      const std::vector<int32_t> ids = m->item_ids(tokens, &unknown);
      const Recommender::IdList list = m->recommend_history_ids(ids, k, exclude);
      std::string out = "{\"k\":" + std::to_string(k) +
                        ",\"history_size\":" + std::to_string(ids.size()) + ",\"items\":";
      append_items(out, *m, list);
      out += ",\"unknown_items\":";
      append_tokens(out, unknown);
      out += "}\n";
      res.set_content(out, "application/json");
      return;
    }
    std::vector<std::string> users;
    if (body.contains("user")) {
      const auto t = token_of(body["user"]);
      if (!t) return json_error(res, 400, "\"user\" must be a user token (a string)");
      users.push_back(*t);
    } else {
      const nlohmann::json& u = body["users"];
      if (!u.is_array()) return json_error(res, 400, "\"users\" must be an array of user tokens");
      if (static_cast<int64_t>(u.size()) > options_.max_users)
        return json_error(res, 400,
                          "\"users\" holds " + std::to_string(u.size()) + " users; at most " +
                              std::to_string(options_.max_users));
      for (const auto& v : u) {
        const auto t = token_of(v);
        if (!t) return json_error(res, 400, "\"users\" must hold user tokens (strings)");
        users.push_back(*t);
      }
    }
    std::vector<int32_t> ids;
    std::vector<std::string> known, unknown;
    for (const std::string& t : users) {
      const int32_t id = m->user_id(t);
      if (id < 0) {
        unknown.push_back(t);
      } else {
        ids.push_back(id);
        known.push_back(t);
      }
    }
    if (body.contains("user") && ids.empty())
      return json_error(res, 404, "unknown user \"" + users[0].substr(0, 256) + "\"");
    std::vector<Recommender::IdList> lists;
    m->recommend_ids(ids, k, exclude, &lists);
    std::string out = "{\"k\":" + std::to_string(k) + ",\"results\":[";
    for (size_t r = 0; r < ids.size(); ++r) {
      if (r > 0) out += ',';
      out += "{\"user\":";
      recbole::serving::append_json_string(out, known[r]);
      out += ",\"items\":";
      append_items(out, *m, lists[r]);
      out += '}';
    }
    out += "],\"unknown_users\":";
    append_tokens(out, unknown);
    out += "}\n";
    res.set_content(out, "application/json");
  }

  static void append_tokens(std::string& out, const std::vector<std::string>& tokens) {
    out += '[';
    for (size_t j = 0; j < tokens.size(); ++j) {
      if (j > 0) out += ',';
      recbole::serving::append_json_string(out, tokens[j]);
    }
    out += ']';
  }

  void get_model(httplib::Response& res) const {
    const auto m = model();
    const Recommender::Info& i = m->info();
    nlohmann::json j = {
        {"model", i.model},
        {"task", i.task},
        {"dataset", i.dataset},
        {"users", i.n_users - 1},
        {"items", i.n_items - 1},
        {"interactions", i.interactions},
        {"scorer", i.scorer},
        {"index", i.index},
        {"recommends_from_history", i.from_history},
        {"checkpoint", i.path},
        {"checkpoint_bytes", i.file_bytes},
        {"checkpoint_written_at", iso_time_of(i.written_at)},
        {"loaded_at", iso_time_of(i.loaded_at)},
        {"load_seconds", i.load_seconds},
        {"reloads", reloads_.load()},
        {"failed_reloads", failed_reloads_.load()},
        {"limits",
         {{"max_k", options_.max_k},
          {"max_users", options_.max_users},
          {"max_history", options_.max_history},
          {"max_body_bytes", options_.max_body_bytes},
          {"threads", options_.threads}}},
        {"rss_mb", static_cast<double>(recbole::memory::current_rss_bytes()) / (1024.0 * 1024.0)}};
    res.set_content(j.dump(2) + "\n", "application/json");
  }

  void get_health(httplib::Response& res) const {
    const auto m = model();
    const double up = std::chrono::duration<double>(Clock::now() - started_).count();
    res.set_content("{\"status\":\"ok\",\"model\":\"" + m->info().model +
                        "\",\"uptime_s\":" + std::to_string(static_cast<int64_t>(up)) + "}\n",
                    "application/json");
  }

  void post_reload(const httplib::Request& req, httplib::Response& res) {
    std::string path;
    if (!req.body.empty()) {
      const nlohmann::json body =
          nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
      if (body.is_discarded() || !body.is_object())
        return json_error(res, 400, "the body must be empty or {\"checkpoint\": \"PATH\"}");
      for (const auto& [key, value] : body.items())
        if (key != "checkpoint")
          return json_error(res, 400, "unknown field \"" + key.substr(0, 64) + "\"");
      if (body.contains("checkpoint")) {
        if (!body["checkpoint"].is_string())
          return json_error(res, 400, "\"checkpoint\" must be a path");
        path = body["checkpoint"].get<std::string>();
      }
    }
    const std::string error = reload(path);
    if (!error.empty())
      return json_error(
          res, 400,
          "reload failed, the old model keeps serving (" + model()->info().path + "): " + error);
    get_model(res);
  }

  const HttpServiceOptions& options() const { return options_; }

 private:
  HttpServiceOptions options_;
  std::shared_ptr<const Recommender> model_;
  Clock::time_point started_;
  std::mutex reload_mutex_;
  std::atomic<int64_t> reloads_{0}, failed_reloads_{0};
};

// The model loaded for the service, and the process set up for it: requests score on the
// server's threads, so BLAS gets one thread.
std::shared_ptr<const Recommender> load_for_serving(const HttpServiceOptions& options) {
  std::shared_ptr<const Recommender> model =
      Recommender::load(options.checkpoint, recommender_options(options));
  recbole::set_blas_threads(1);
  std::fprintf(stderr, "recbole_serve: %s\n", model->info().summary().c_str());
  return model;
}

}  // namespace

struct HttpService::Impl {
  explicit Impl(HttpServiceOptions o)
      : endpoints(o, load_for_serving(o)), access_log(o.access_log) {
    const HttpServiceOptions& options = endpoints.options();
    server.new_task_queue = [&options] {
      return new ConnectionPool(options.threads, options.max_queue, options.max_wait_ms);
    };
    server.set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
    server.set_keep_alive_max_count(static_cast<size_t>(1) << 30);
    server.set_keep_alive_timeout(options.keep_alive_timeout);
    server.set_read_timeout(options.read_timeout, 0);
    server.set_write_timeout(options.read_timeout, 0);
    server.set_tcp_nodelay(true);

    server.set_pre_routing_handler([this](const httplib::Request&, httplib::Response& res) {
      t_request_start = Clock::now();
      t_request_timed = true;
      if (t_shed) {
        t_shed = false;  // later requests of this connection are served
        shed++;
        res.set_header("Retry-After", "1");
        res.set_header("Connection", "close");
        Endpoints::json_error(res, 503, "the server is overloaded: try again");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server.Get("/recommend", [this](const httplib::Request& req, httplib::Response& res) {
      endpoints.get_recommend(req, res);
    });
    server.Post("/recommend", [this](const httplib::Request& req, httplib::Response& res) {
      endpoints.post_recommend(req, res);
    });
    server.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      endpoints.get_health(res);
    });
    server.Get("/model", [this](const httplib::Request&, httplib::Response& res) {
      endpoints.get_model(res);
    });
    server.Post("/reload", [this](const httplib::Request& req, httplib::Response& res) {
      endpoints.post_reload(req, res);
    });
    // Responses httplib makes itself (no route 404, bad request line 400, body too large 413,
    // URI too long 414) get a JSON body too.
    server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      std::string message;
      switch (res.status) {
        case 404:
          message = "no such endpoint: " + req.method + " " + req.path.substr(0, 128);
          break;
        case 413:
          message = "the request body is too large";
          break;
        case 414:
          message = "the request URI is too long";
          break;
        case 400:
          message = "malformed request";
          break;
        case 405:
          message = "method not allowed";
          break;
        default:
          message = "HTTP status " + std::to_string(res.status);
      }
      Endpoints::json_error(res, res.status, message);
    });
    server.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "internal error";
          try {
            std::rethrow_exception(ep);
          } catch (const recbole::Error& e) {
            return Endpoints::json_error(res, 400, e.what());
          } catch (const std::exception& e) {
            what += std::string(": ") + e.what();
          } catch (...) {
          }
          Endpoints::json_error(res, 500, what);
        });
    server.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      access_log.write(req, res);
      t_request_timed = false;
    });
  }

  Endpoints endpoints;
  AccessLog access_log;
  Server server;
  std::atomic<int64_t> shed{0};
  int port = 0;
  // stop() and listen() meet through these (both seq_cst): either listen() sees the stop and
  // does not start, or stop() sees listen() under way and waits for httplib to run before
  // stopping it (httplib's stop() does nothing to a server not yet running).
  std::atomic<bool> listening{false}, stop_requested{false};
  bool listened = false;
};

HttpService::HttpService(HttpServiceOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpService::~HttpService() = default;

int HttpService::bind() {
  if (impl_->port > 0) throw recbole::Error("HttpService::bind: already bound");
  const HttpServiceOptions& options = impl_->endpoints.options();
  Server& server = impl_->server;
  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
    if (port < 0) throw recbole::Error("cannot listen on " + options.host + " (any port)");
  } else if (!server.bind_to_port(options.host, port)) {
    throw recbole::Error("cannot listen on " + options.host + ":" + std::to_string(port) +
                         " (in use, or not an address of this machine)");
  }
  // cpp-httplib listens with a backlog of 5; a burst of connections would wait for SYN
  // retries (a second or more) instead of the queue.
  ::listen(server.listening_socket(), 4096);
  impl_->port = port;
  return port;
}

int HttpService::port() const { return impl_->port; }

bool HttpService::listen() {
  if (impl_->listened) throw recbole::Error("HttpService::listen: called twice");
  impl_->listened = true;
  if (impl_->port == 0) bind();
  const HttpServiceOptions& options = impl_->endpoints.options();
  std::fprintf(stderr, "recbole_serve: listening on http://%s:%d (%d threads)\n",
               options.host.c_str(), impl_->port, options.threads);
  impl_->listening = true;
  bool ok = true;
  if (!impl_->stop_requested) ok = impl_->server.listen_after_bind();
  impl_->listening = false;
  std::fprintf(stderr, "recbole_serve: stopped (%lld connections shed with 503)\n",
               static_cast<long long>(impl_->shed.load()));
  return ok;
}

void HttpService::stop() {
  if (impl_->stop_requested.exchange(true)) return;
  while (impl_->listening && !impl_->server.is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->server.stop();
}

std::string HttpService::reload(const std::string& path) { return impl_->endpoints.reload(path); }

int64_t HttpService::shed_count() const { return impl_->shed.load(); }

const HttpServiceOptions& HttpService::options() const { return impl_->endpoints.options(); }

}  // namespace recbole::serving
