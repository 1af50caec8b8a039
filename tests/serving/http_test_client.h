#pragma once
// A raw HTTP/1.1 client over loopback sockets for the server tests (no library between the test
// and the server: a malformed request goes out byte for byte), and a recbole_serve process.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace recbole::testing {

struct HttpReply {
  int status = 0;  // 0: no reply (connection failed or closed without one)
  std::string headers;
  std::string body;
};

// Splits a raw reply into status, headers and body (Content-Length or up to the end).
inline HttpReply parse_reply(const std::string& raw) {
  HttpReply r;
  const size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || end == std::string::npos) return r;
  r.status = std::atoi(raw.c_str() + 9);
  r.headers = raw.substr(0, end);
  r.body = raw.substr(end + 4);
  return r;
}

inline int connect_loopback(int port, bool nonblocking = false) {
  const int fd =
      ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` as is, reads until the server closes (or `timeout_s`), parses the reply.
inline HttpReply raw_request(int port, const std::string& request, double timeout_s = 30) {
  const int fd = connect_loopback(port);
  if (fd < 0) return {};
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_s);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer (413) and close before reading it all
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return parse_reply(raw);
}

inline HttpReply http_get(int port, const std::string& target, double timeout_s = 30) {
  return raw_request(port,
                     "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                     timeout_s);
}

inline HttpReply http_post(int port, const std::string& target, const std::string& body,
                           double timeout_s = 30) {
  return raw_request(port,
                     "POST " + target +
                         " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                         "Content-Type: application/json\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body,
                     timeout_s);
}

// "%XX" for every byte that is not unreserved.
inline std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// A recbole_serve process on a free loopback port. RECBOLE_SERVE_WRAPPER (e.g. "valgrind
// --error-exitcode=99") prefixes the command.
class ServerProcess {
 public:
  ServerProcess(const std::string& binary, const std::vector<std::string>& args,
                const std::string& dir, double start_timeout_s = 120)
      : port_file_(dir + "/port"), log_(dir + "/server.log") {
    std::filesystem::remove(port_file_);
    std::vector<std::string> argv;
    if (const char* w = std::getenv("RECBOLE_SERVE_WRAPPER")) {
      std::istringstream in(w);
      for (std::string t; in >> t;) argv.push_back(t);
    }
    argv.push_back(binary);
    for (const auto& a : args) argv.push_back(a);
    argv.push_back("--port=0");
    argv.push_back("--port_file=" + port_file_);
    pid_ = ::fork();
    if (pid_ == 0) {
      const int out = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(out, 2);
      std::vector<char*> c;
      for (auto& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      ::execvp(c[0], c.data());
      std::_Exit(127);
    }
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() <
           start_timeout_s) {
      std::ifstream in(port_file_);
      if (in >> port_ && port_ > 0) return;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("recbole_serve exited at start: " + log());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("recbole_serve did not start: " + log());
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Whether the process still runs (reaps it when it has exited).
  bool alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == 0) return true;
    pid_ = -1;
    return false;
  }
  void signal(int sig) const { ::kill(pid_, sig); }
  // Waits for the process to exit; its exit status, or -1 after `timeout_s`.
  int wait_exit(double timeout_s) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() <
           timeout_s) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string port_file_, log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace recbole::testing
