#include "recbole/runtime/checkpoint_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "recbole/utils/error.h"

namespace recbole::trainer {
namespace {

constexpr char kMagic[8] = {'R', 'B', 'C', 'K', 'S', 'U', 'M', '\n'};

void put_le(unsigned char* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(value >> (8 * i));
}

uint64_t get_le(const unsigned char* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(in[i]) << (8 * i);
  return value;
}

// zlib's crc32 takes at most UINT_MAX bytes a call.
uint32_t crc_update(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {
    const auto part = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = static_cast<uint32_t>(crc32(crc, p, part));
    p += part;
    n -= part;
  }
  return crc;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// pread until `n` bytes or the end; the count read.
size_t read_at(int fd, uint64_t pos, void* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got =
        ::pread(fd, static_cast<char*>(buf) + done, n - done, static_cast<off_t>(pos + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

}  // namespace

ByteProducer checkpoint_bytes(std::shared_ptr<torch::serialize::OutputArchive> archive) {
  return [archive = std::move(archive)](const ByteSink& sink) {
    uint64_t size = 0;
    uint32_t crc = static_cast<uint32_t>(crc32(0L, Z_NULL, 0));
    archive->save_to([&](const void* data, size_t n) {
      crc = crc_update(crc, data, n);
      size += n;
      sink(data, n);
      return n;
    });
    unsigned char trailer[kCheckpointTrailerBytes];
    put_le(trailer, size, 8);
    put_le(trailer + 8, crc, 4);
    put_le(trailer + 12, kCheckpointTrailerVersion, 4);
    std::memcpy(trailer + 16, kMagic, sizeof kMagic);
    sink(trailer, sizeof trailer);
  };
}

void load_checkpoint_archive(const std::string& path, const std::string& what,
                             torch::serialize::InputArchive& archive,
                             std::optional<torch::Device> device) {
  const std::string name = what + " " + path;
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    throw Error(name +
                (errno == ENOENT ? " does not exist" : ": " + std::string(std::strerror(errno))));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw Error(name + " is not a regular file");
  const auto file_size = static_cast<uint64_t>(st.st_size);
  unsigned char trailer[kCheckpointTrailerBytes];
  if (file_size < sizeof trailer ||
      read_at(fd.get(), file_size - sizeof trailer, trailer, sizeof trailer) != sizeof trailer ||
      std::memcmp(trailer + 16, kMagic, sizeof kMagic) != 0)
    throw Error(name +
                " is not a whole recbole-cpp checkpoint: it was cut short, or written by "
                "another program or an older recbole-cpp (no checksum trailer)");
  const uint64_t payload = get_le(trailer, 8);
  const auto expected_crc = static_cast<uint32_t>(get_le(trailer + 8, 4));
  const auto version = static_cast<uint32_t>(get_le(trailer + 12, 4));
  if (version > kCheckpointTrailerVersion)
    throw Error(name + " was written by a newer recbole-cpp (checkpoint trailer version " +
                std::to_string(version) + "; this one reads " +
                std::to_string(kCheckpointTrailerVersion) + ")");
  if (payload != file_size - sizeof trailer)
    throw Error(name + " is damaged: it should hold " + std::to_string(payload + sizeof trailer) +
                " bytes, it holds " + std::to_string(file_size));
  uint32_t crc = static_cast<uint32_t>(crc32(0L, Z_NULL, 0));
  std::vector<char> buffer(size_t{1} << 20);
  for (uint64_t pos = 0; pos < payload;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), payload - pos));
    const size_t got = read_at(fd.get(), pos, buffer.data(), want);
    if (got != want) throw Error(name + ": read error at byte " + std::to_string(pos + got));
    crc = crc_update(crc, buffer.data(), got);
    pos += got;
  }
  if (crc != expected_crc)
    throw Error(name + " is damaged (its checksum does not match its contents)");
  // libtorch reads the payload only, through the same descriptor.
  const int raw = fd.get();
  try {
    archive.load_from(
        [raw, payload](uint64_t pos, void* buf, size_t n) -> size_t {
          if (pos >= payload) return 0;
          return read_at(raw, pos, buf, static_cast<size_t>(std::min<uint64_t>(n, payload - pos)));
        },
        [payload]() -> size_t { return static_cast<size_t>(payload); },
        device ? c10::optional<torch::Device>(*device) : c10::nullopt);
  } catch (const std::exception& e) {  // c10::Error, or the TorchScript reader's own errors
    throw Error(name + " cannot be read by libtorch although its checksum matches (" +
                std::string(e.what()).substr(0, 200) + ")");
  }
}

}  // namespace recbole::trainer
