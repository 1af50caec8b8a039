#include "recbole/download/http.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/progress.h"

namespace recbole::data {
namespace {

using Clock = std::chrono::steady_clock;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK)
      throw DataError(std::string("cannot initialise libcurl: ") + curl_easy_strerror(rc));
  });
}

bool starts_with_nocase(const std::string& text, const char* prefix) {
  size_t n = std::strlen(prefix);
  if (text.size() < n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  return true;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

int64_t file_size_of_fd(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? int64_t(st.st_size) : -1;
}

// The sidecar of a partial file: the URL it came from and the server's validator (ETag or
// Last-Modified), so that a resume asks for the same version of the same file.
struct PartOrigin {
  bool present = false;
  std::string url, validator;
};

PartOrigin read_part_origin(const std::string& path) {
  PartOrigin o;
  std::ifstream in(path);
  o.present = bool(std::getline(in, o.url));
  std::getline(in, o.validator);
  return o;
}

// One request: its response headers, where its bytes go, and why the callbacks stopped it.
struct Transfer {
  CURL* curl = nullptr;
  int fd = -1;
  bool is_http = true;
  int64_t offset = 0;  // bytes in the file before this request's body
  int64_t expected_size = -1;
  int64_t received = 0;
  bool body_started = false;
  int64_t total = -1;  // full size of the resource, when the server said
  std::string abort_reason;
  bool abort_permanent = false;
  std::string origin_path;
  std::string url;

  // Headers of the latest response (a redirect starts a new one).
  std::string reason_phrase;
  int64_t content_length = -1;
  int64_t range_start = -1;
  int64_t range_total = -1;
  std::string etag, last_modified;

  // Stall detection.
  Clock::duration stall_limit{};
  std::string stall_text;
  curl_off_t last_dlnow = -1;
  Clock::time_point last_data = Clock::now();

  // Progress (recbole/utils/progress.h), from the first body byte on, when asked for.
  bool show_progress = false;
  std::string label;
  std::unique_ptr<Progress> progress;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line = trim(std::string(data, size * count));
  if (starts_with_nocase(line, "http/")) {
    t->reason_phrase.clear();
    t->content_length = t->range_start = t->range_total = -1;
    t->etag.clear();
    t->last_modified.clear();
    // "HTTP/1.1 404 Not Found": keep the reason phrase for messages.
    size_t a = line.find(' ');
    size_t b = a == std::string::npos ? a : line.find(' ', a + 1);
    if (b != std::string::npos) t->reason_phrase = line.substr(b + 1);
  } else if (starts_with_nocase(line, "content-length:")) {
    t->content_length = std::strtoll(line.c_str() + 15, nullptr, 10);
  } else if (starts_with_nocase(line, "content-range:")) {
    // "bytes 100-199/200" or "bytes */200"
    std::string v = trim(line.substr(14));
    if (starts_with_nocase(v, "bytes")) v = trim(v.substr(5));
    size_t slash = v.find('/');
    if (slash != std::string::npos) {
      if (v[0] != '*') t->range_start = std::strtoll(v.c_str(), nullptr, 10);
      if (v.compare(slash + 1, std::string::npos, "*") != 0)
        t->range_total = std::strtoll(v.c_str() + slash + 1, nullptr, 10);
    }
  } else if (starts_with_nocase(line, "etag:")) {
    t->etag = trim(line.substr(5));
  } else if (starts_with_nocase(line, "last-modified:")) {
    t->last_modified = trim(line.substr(14));
  }
  return size * count;
}

// Decides, at the first body byte, whether the response continues our file or replaces it.
bool start_body(Transfer* t) {
  t->body_started = true;
  long code = 0;
  if (t->is_http) curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
  if (t->is_http && code == 206) {
    if (t->range_start != t->offset) {
      t->abort_reason = "server answered the range request from byte " +
                        std::to_string(t->range_start) + " instead of " + std::to_string(t->offset);
      return false;
    }
    t->total = t->range_total;
  } else {
    if (t->offset > 0) {
      // The server ignored the range (or the file changed, per If-Range): start again.
      log::info(t->label + ": the server sent the whole file; restarting the download");
      if (ftruncate(t->fd, 0) != 0) {
        t->abort_reason = std::string("cannot truncate the partial file: ") + std::strerror(errno);
        return false;
      }
      t->offset = 0;
    }
    if (t->content_length >= 0) t->total = t->content_length;
  }
  if (t->total >= 0 && t->expected_size >= 0 && t->total != t->expected_size) {
    t->abort_reason = "size mismatch: the server announces " + std::to_string(t->total) +
                      " bytes, expected " + std::to_string(t->expected_size);
    t->abort_permanent = true;
    return false;
  }
  if (t->show_progress) {
    ProgressOptions o;
    o.label = t->label;
    o.total = t->total;
    o.done = t->offset;
    o.bytes = true;
    o.keep_at_end = true;
    t->progress = std::make_unique<Progress>(o);
  }
  if (t->offset == 0) {
    // Remember what identifies this version of the file so a resume can ask for the same one.
    std::string validator = !t->etag.empty() ? t->etag : t->last_modified;
    std::ofstream(t->origin_path, std::ios::trunc) << t->url << "\n" << validator << "\n";
  }
  return true;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  if (!t->body_started && !start_body(t)) return 0;
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(t->fd, data + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      t->abort_reason = std::string("cannot write the download: ") + std::strerror(errno);
      t->abort_permanent = true;
      return 0;
    }
    done += size_t(w);
  }
  t->received += int64_t(n);
  if (t->progress) t->progress->set_done(t->offset + t->received);
  return n;
}

int on_progress(void* user, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  const auto now = Clock::now();
  if (dlnow != t->last_dlnow) {
    t->last_dlnow = dlnow;
    t->last_data = now;
  } else if (now - t->last_data > t->stall_limit) {
    // libcurl's own low-speed check averages over several seconds, so a burst followed by
    // silence would outlast timeout_s by far; this checks the time since the last byte.
    t->abort_reason = "timed out: no data for " + t->stall_text + " s";
    return 1;
  }
  return 0;
}

enum class Outcome { kDone, kTransient, kPermanent, kRestart };

struct AttemptResult {
  Outcome outcome = Outcome::kDone;
  std::string cause;
  int64_t received = 0;
};

bool is_transient(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_AGAIN:
      return true;
    default:
      return false;
  }
}

AttemptResult attempt(const std::string& url, int fd, const std::string& origin_path,
                      int64_t expected_size, const DownloadOptions& opts,
                      const std::string& label) {
  Transfer t;
  t.fd = fd;
  t.offset = file_size_of_fd(fd);
  t.expected_size = expected_size;
  t.origin_path = origin_path;
  t.url = url;
  t.label = label;
  t.show_progress = opts.show_progress;
  t.is_http = starts_with_nocase(url, "http://") || starts_with_nocase(url, "https://");
  t.stall_limit =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.timeout_s));
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g", opts.timeout_s);
  t.stall_text = seconds;

  CURL* curl = curl_easy_init();
  if (!curl) return {Outcome::kPermanent, "cannot create a libcurl handle", 0};
  t.curl = curl;
  char errbuf[CURL_ERROR_SIZE] = {0};
  const long timeout_ms = std::max(1L, long(std::lround(opts.timeout_s * 1000)));
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "recbole-cpp");
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  // A stall (less than 1 byte/s for timeout_s) ends the attempt; a slow but moving download
  // does not, however long it takes.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, long(std::lround(opts.timeout_s))));
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  std::string range;
  curl_slist* headers = nullptr;
  if (t.offset > 0) {
    range = std::to_string(t.offset) + "-";
    curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    std::string validator = read_part_origin(origin_path).validator;
    if (t.is_http && !validator.empty()) {
      headers = curl_slist_append(headers, ("If-Range: " + validator).c_str());
      curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    }
  }

  CURLcode rc = curl_easy_perform(curl);
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  t.progress.reset();  // the last state, before any message about the attempt
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);

  AttemptResult r;
  r.received = t.received;
  if (rc == CURLE_OK) {
    int64_t size = file_size_of_fd(fd);
    if (t.total >= 0 && size != t.total) {
      r.outcome = Outcome::kTransient;
      r.cause = "incomplete body: have " + std::to_string(size) + " of " + std::to_string(t.total) +
                " bytes";
    }
    return r;
  }
  if (!t.abort_reason.empty()) {
    r.outcome = t.abort_permanent ? Outcome::kPermanent : Outcome::kTransient;
    r.cause = t.abort_reason;
    return r;
  }
  if (rc == CURLE_HTTP_RETURNED_ERROR) {
    if (code == 416 && t.offset > 0) {
      // Nothing left to fetch: the partial file may already be complete; else start over.
      if (t.range_total == t.offset) return r;
      r.outcome = Outcome::kRestart;
      r.cause = "HTTP 416: the server refused to resume from byte " + std::to_string(t.offset);
      return r;
    }
    r.cause =
        "HTTP " + std::to_string(code) + (t.reason_phrase.empty() ? "" : " " + t.reason_phrase);
    r.outcome =
        (code >= 500 || code == 408 || code == 429) ? Outcome::kTransient : Outcome::kPermanent;
    return r;
  }
  if (rc == CURLE_RANGE_ERROR && t.offset > 0) {
    r.outcome = Outcome::kRestart;
    r.cause = "the server cannot resume a download";
    return r;
  }
  std::string detail = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    r.cause = "timed out (timeout " + t.stall_text + " s): " + detail;
  } else if (rc == CURLE_PARTIAL_FILE) {
    r.cause = "connection closed before the end of the file: " + detail;
  } else {
    r.cause = detail;
  }
  r.outcome = is_transient(rc) ? Outcome::kTransient : Outcome::kPermanent;
  return r;
}

}  // namespace

HttpDownloadStats http_download(const std::string& url, const std::string& part_path,
                                int64_t expected_size, const DownloadOptions& opts,
                                const std::string& label) {
  init_curl_once();
  const std::string origin_path = part_path + ".origin";
  int fd = open(part_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    throw DataError(part_path + ": cannot create the download file: " + std::strerror(errno));
  auto discard_partial = [&] {
    close(fd);
    fd = -1;
    std::remove(part_path.c_str());
    std::remove(origin_path.c_str());
  };

  HttpDownloadStats stats;
  stats.resumed_from = file_size_of_fd(fd);
  const PartOrigin origin = read_part_origin(origin_path);
  if ((expected_size >= 0 && stats.resumed_from > expected_size) ||
      (origin.present && origin.url != url)) {
    // Longer than the file can be, or from another URL: not a prefix of this file.
    if (ftruncate(fd, 0) != 0) {
      discard_partial();
      throw DataError(part_path + ": cannot truncate: " + std::strerror(errno));
    }
    stats.resumed_from = 0;
  }
  if (stats.resumed_from > 0)
    log::info(label + ": resuming a partial download from byte " +
              std::to_string(stats.resumed_from));

  int failures = 0;
  bool restarted = false;
  for (;;) {
    if (expected_size >= 0 && file_size_of_fd(fd) == expected_size) break;  // nothing missing
    ++stats.attempts;
    AttemptResult r = attempt(url, fd, origin_path, expected_size, opts, label);
    stats.bytes_fetched += r.received;
    if (r.outcome == Outcome::kDone) break;
    if (r.outcome == Outcome::kRestart && !restarted) {
      restarted = true;
      std::remove(origin_path.c_str());
      if (ftruncate(fd, 0) == 0) continue;
      r.outcome = Outcome::kPermanent;
    }
    if (r.outcome != Outcome::kTransient) {
      discard_partial();
      throw DataError(r.cause);
    }
    const int64_t size = file_size_of_fd(fd);
    if (++failures > opts.retries) {
      if (size == 0) {
        discard_partial();
      } else {
        close(fd);  // kept, for the next call to resume
      }
      std::string message = r.cause;
      if (stats.attempts > 1)
        message += " (gave up after " + std::to_string(stats.attempts) + " attempts)";
      throw DataError(message);
    }
    double wait_s = std::min(60.0, opts.retry_backoff_s * std::pow(2.0, std::max(0, failures - 1)));
    char wait_text[32];
    std::snprintf(wait_text, sizeof(wait_text), "%.3g", wait_s);
    log::warning(label + ": " + r.cause + "; retrying in " + wait_text + " s");
    std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
  }
  stats.final_size = file_size_of_fd(fd);
  close(fd);
  return stats;
}

}  // namespace recbole::data
