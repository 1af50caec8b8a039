#include "http_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace recbole::testing {
namespace {

bool send_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

std::string header_value(const std::string& request, const std::string& name) {
  std::string lower_request = request;
  std::transform(lower_request.begin(), lower_request.end(), lower_request.begin(), ::tolower);
  std::string key = "\r\n" + name + ":";
  size_t pos = lower_request.find(key);
  if (pos == std::string::npos) return "";
  size_t start = pos + key.size();
  size_t end = request.find("\r\n", start);
  std::string v = request.substr(start, end - start);
  while (!v.empty() && v.front() == ' ') v.erase(v.begin());
  return v;
}

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 206:
      return "Partial Content";
    case 404:
      return "Not Found";
    case 416:
      return "Range Not Satisfiable";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

}  // namespace

HttpTestServer::HttpTestServer() {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket failed");
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 64) != 0)
    throw std::runtime_error("bind/listen on 127.0.0.1 failed");
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

HttpTestServer::~HttpTestServer() {
  stopping_ = true;
  acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    threads.swap(connections_);
  }
  for (auto& t : threads) t.join();
  close(listen_fd_);
}

void HttpTestServer::set(const std::string& path, Route route) {
  std::lock_guard<std::mutex> lock(mutex_);
  routes_[path] = std::move(route);
}

std::string HttpTestServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<RequestLog> HttpTestServer::requests(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = log_.find(path);
  return it == log_.end() ? std::vector<RequestLog>{} : it->second;
}

int64_t HttpTestServer::body_bytes(const std::string& path) const {
  int64_t total = 0;
  for (const auto& r : requests(path)) total += r.body_bytes;
  return total;
}

void HttpTestServer::accept_loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    connections_.emplace_back([this, fd] {
      serve(fd);
      close(fd);
    });
  }
}

// Waits until the client closes the connection or the server stops; true if the client left.
bool HttpTestServer::wait_for_client_to_leave(int fd) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!stopping_ && std::chrono::steady_clock::now() < give_up) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) > 0) {
      char c;
      if (recv(fd, &c, 1, 0) <= 0) return true;
    }
  }
  return false;
}

void HttpTestServer::serve(int fd) {
  std::string request;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (request.find("\r\n\r\n") == std::string::npos) {
    if (stopping_ || std::chrono::steady_clock::now() > deadline) return;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    request.append(buf, size_t(n));
  }
  // "GET <target> HTTP/1.1"; a proxy request has an absolute URL as target.
  size_t sp1 = request.find(' ');
  size_t sp2 = request.find(' ', sp1 + 1);
  std::string target = request.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string path = target;
  if (path.rfind("http://", 0) == 0) {
    size_t slash = path.find('/', 7);
    path = slash == std::string::npos ? "/" : path.substr(slash);
  }
  std::string range = header_value(request, "range");
  std::string if_range = header_value(request, "if-range");

  Route route;
  bool found;
  size_t index;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = routes_.find(path);
    found = it != routes_.end();
    if (found) route = it->second;
    auto& entries = log_[path];
    index = entries.size();
    entries.push_back({target, range, 0});
  }
  auto count_bytes = [&](int64_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    log_[path][index].body_bytes += n;
  };

  if (found && route.stall_before_headers) {
    wait_for_client_to_leave(fd);
    return;
  }
  int status = found ? route.status : 404;
  if (found && int(index) >= route.status_times) status = 200;
  if (status != 200) {
    std::string text = std::string(reason(status)) + "\n";
    std::string head =
        "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
        "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(text.size()) +
        "\r\nConnection: close\r\n\r\n";
    send_all(fd, head.data(), head.size());
    send_all(fd, text.data(), text.size());
    return;
  }

  const int64_t size = int64_t(route.body.size());
  int64_t start = 0;
  bool partial = false;
  if (route.ranges && range.rfind("bytes=", 0) == 0 &&
      (if_range.empty() || if_range == route.etag)) {
    start = std::strtoll(range.c_str() + 6, nullptr, 10);
    partial = true;
  }
  std::string head;
  if (partial && start >= size) {
    head = "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */" + std::to_string(size) +
           "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    send_all(fd, head.data(), head.size());
    return;
  }
  if (partial) {
    head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(start) + "-" +
           std::to_string(size - 1) + "/" + std::to_string(size) + "\r\n";
  } else {
    head = "HTTP/1.1 200 OK\r\n";
  }
  head +=
      "Content-Type: application/octet-stream\r\nContent-Length: " + std::to_string(size - start) +
      "\r\n";
  if (route.ranges) head += "Accept-Ranges: bytes\r\n";
  if (!route.etag.empty()) head += "ETag: " + route.etag + "\r\n";
  head += "Connection: close\r\n\r\n";
  if (!send_all(fd, head.data(), head.size())) return;

  int64_t end = size;
  bool stall = false;
  if (route.cut_at >= 0 && int(index) < route.cut_times)
    end = std::max(start, std::min(size, route.cut_at));
  if (route.stall_at >= 0 && route.stall_at < end) {
    end = std::max(start, route.stall_at);
    stall = true;
  }
  constexpr int64_t kChunk = 16 * 1024;
  for (int64_t pos = start; pos < end && !stopping_;) {
    int64_t n = std::min(kChunk, end - pos);
    // Counted before sending: the client may read the last chunk and the test may look at the
    // count before this thread runs again (a race seen in CI). Every test's client reads what is
    // sent, so counting the chunk first never over-counts there.
    count_bytes(n);
    if (!send_all(fd, route.body.data() + pos, size_t(n))) return;
    pos += n;
    if (route.chunk_delay_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(route.chunk_delay_ms));
  }
  if (stall) {
    wait_for_client_to_leave(fd);
    return;
  }
  shutdown(fd, SHUT_WR);
}

}  // namespace recbole::testing
