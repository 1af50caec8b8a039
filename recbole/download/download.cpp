#include "recbole/download/download.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>

#include "recbole/config/embedded_configs.h"
#include "recbole/download/archive.h"
#include "recbole/download/http.h"
#include "recbole/download/lock.h"
#include "recbole/download/sha256.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/text.h"

namespace recbole::data {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRegistryPath = "datasets/registry.yaml";

// The last path segment of a URL, without query or fragment.
std::string url_file_name(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  size_t scheme = path.find("://");
  if (scheme != std::string::npos) {
    size_t slash = path.find('/', scheme + 3);
    path = slash == std::string::npos ? "" : path.substr(slash);
  }
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string strip_archive_extension(const std::string& file_name) {
  static const char* const kExtensions[] = {".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst",
                                            ".tgz",    ".tbz2",    ".txz",    ".zip",
                                            ".tar",    ".7z",      ".gz"};
  for (const char* ext : kExtensions) {
    std::string e = ext;
    if (file_name.size() > e.size() && to_lower(file_name.substr(file_name.size() - e.size())) == e)
      return file_name.substr(0, file_name.size() - e.size());
  }
  size_t dot = file_name.rfind('.');
  return dot == std::string::npos || dot == 0 ? file_name : file_name.substr(0, dot);
}

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

struct Registry {
  std::map<std::string, DatasetSource> sources;
};

// datasets/registry.yaml, parsed once. A malformed entry is a bug in the shipped file, reported
// with the file and the key.
const Registry& registry() {
  static Registry reg;
  static std::once_flag once;
  std::call_once(once, [] {
    auto text = recbole::config::embedded_file(kRegistryPath);
    if (!text) return;
    YAML::Node root = YAML::Load(*text);
    YAML::Node datasets = root["datasets"];
    if (!datasets || !datasets.IsMap()) return;
    for (const auto& item : datasets) {
      const std::string name = item.first.as<std::string>();
      const YAML::Node e = item.second;
      const std::string where = std::string(kRegistryPath) + ": datasets." + name;
      DatasetSource s;
      s.name = name;
      s.origin = kRegistryPath;
      if (!e["url"] || e["url"].as<std::string>().empty())
        throw ConfigError(where + ".url: expected a URL, got nothing");
      s.url = e["url"].as<std::string>();
      if (e["sha256"] && !e["sha256"].IsNull()) s.sha256 = to_lower(e["sha256"].as<std::string>());
      if (!s.sha256.empty() && !is_sha256_hex(s.sha256))
        throw ConfigError(where + ".sha256: expected 64 hex digits, got \"" + s.sha256 + "\"");
      if (e["size"] && !e["size"].IsNull()) s.size = e["size"].as<int64_t>();
      s.archive_stem = e["archive_stem"] && !e["archive_stem"].IsNull()
                           ? e["archive_stem"].as<std::string>()
                           : strip_archive_extension(url_file_name(s.url));
      if (e["files"] && e["files"].IsMap())
        for (const auto& f : e["files"])
          s.files[f.first.as<std::string>()] = f.second.as<std::string>();
      reg.sources[name] = s;
    }
  });
  return reg;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
  return text;
}

// The folder holding the archive's files: the extraction folder itself, or its only entry when
// that is a folder (archives often wrap everything in one top-level folder).
fs::path content_root(const fs::path& extracted) {
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(extracted)) entries.push_back(e.path());
  if (entries.size() == 1 && fs::is_directory(fs::symlink_status(entries[0]))) return entries[0];
  return extracted;
}

// Gives the files their dataset names: first the source's explicit mapping, then RecBole's
// rule (every top-level file whose base name contains the archive's stem gets that part
// replaced by the dataset's name).
void rename_to_dataset(const fs::path& folder, const DatasetSource& source) {
  for (const auto& [suffix, member] : source.files) {
    fs::path from = folder / member;
    fs::path to = folder / (source.name + "." + suffix);
    if (!fs::is_regular_file(fs::symlink_status(from)))
      throw DataError(source.origin + ": " + source.name + ".files." + suffix + ": \"" + member +
                      "\" is not a file in the archive");
    if (from != to) fs::rename(from, to);
  }
  if (source.archive_stem.empty() || source.archive_stem == source.name) return;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_regular_file()) files.push_back(e.path());
  for (const auto& from : files) {
    const std::string base = from.stem().string();
    const std::string suffix = from.extension().string();
    if (base.find(source.archive_stem) == std::string::npos) continue;
    fs::path to = folder / (replace_all(base, source.archive_stem, source.name) + suffix);
    if (fs::exists(fs::symlink_status(to))) {
      log::warning(source.name + ": archive has both " + from.filename().string() + " and " +
                   to.filename().string() + "; keeping both names as they are");
      continue;
    }
    if (suffix != ".inter" && suffix != ".user" && suffix != ".item")
      log::warning(source.name + ": renaming " + from.filename().string() + " to " +
                   to.filename().string() + " (not an .inter, .user or .item file)");
    fs::rename(from, to);
  }
}

std::vector<std::string> top_level_names(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", s);
  return buf;
}

}  // namespace

std::vector<std::string> registered_dataset_names() {
  std::vector<std::string> names;
  for (const auto& [name, source] : registry().sources) names.push_back(name);
  return names;
}

std::optional<DatasetSource> find_dataset_source(const std::string& name,
                                                 const std::string& user_url,
                                                 const std::string& user_sha256) {
  if (!is_plain_file_name(name))
    throw ConfigError("dataset: expected a folder name (no '/'), got \"" + name + "\"");
  if (!user_sha256.empty() && !is_sha256_hex(user_sha256))
    throw ConfigError("download_sha256: expected 64 hex digits, got \"" + user_sha256 + "\"");
  std::optional<DatasetSource> source;
  if (!user_url.empty()) {
    DatasetSource s;
    s.name = name;
    s.url = user_url;
    s.archive_stem = strip_archive_extension(url_file_name(user_url));
    s.origin = "download_url";
    source = s;
  } else {
    auto it = registry().sources.find(name);
    if (it == registry().sources.end()) return std::nullopt;
    source = it->second;
  }
  if (!user_sha256.empty()) source->sha256 = to_lower(user_sha256);
  return source;
}

std::string ensure_dataset_files(const std::string& name, const std::string& data_path,
                                 const DownloadOptions& opts, const std::string& user_url,
                                 const std::string& user_sha256) {
  if (!is_plain_file_name(name))
    throw ConfigError("dataset: expected a folder name (no '/'), got \"" + name + "\"");
  const fs::path root = data_path.empty() ? fs::path(".") : fs::path(data_path);
  const fs::path dir = root / name;
  const fs::path inter = dir / (name + ".inter");
  if (fs::exists(inter)) return dir.string();

  const std::string shown_dir = fs::absolute(dir).lexically_normal().string();
  const std::string by_hand = "To use it without downloading, put " + name + ".inter (and " + name +
                              ".user, " + name + ".item, if any) into " + shown_dir + "/.";
  auto source = find_dataset_source(name, user_url, user_sha256);
  if (!source) {
    throw DataError(shown_dir + "/" + name + ".inter: not found, and \"" + name +
                    "\" is not a dataset that can be downloaded by name (known: " +
                    join(registered_dataset_names(), ", ") + "). " + by_hand +
                    " Or set download_url to a zip of those files.");
  }

  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw DataError(root.string() + ": cannot create the data folder: " + ec.message());
  DownloadLock lock((root / ("." + name + ".lock")).string());
  if (fs::exists(inter)) {
    // Another process downloaded it while we waited for the lock.
    log::info(name + ": using the files downloaded by another process");
    return dir.string();
  }
  if (fs::exists(fs::symlink_status(dir)) &&
      !(fs::is_directory(fs::symlink_status(dir)) && fs::is_empty(dir, ec))) {
    throw DataError(shown_dir + ": exists but has no " + name + ".inter; " + by_hand +
                    " Or remove the folder to let it be downloaded from " + source->url + ".");
  }

  const fs::path staging = root / ("." + name + ".download");
  std::string archive_name = url_file_name(source->url);
  if (!is_plain_file_name(archive_name)) archive_name = name + ".zip";
  const fs::path part = staging / (archive_name + ".part");
  const fs::path archive = staging / archive_name;
  const fs::path extracted = staging / "extract";
  fs::create_directories(staging, ec);
  if (ec) throw DataError(staging.string() + ": cannot create: " + ec.message());
  fs::remove_all(extracted, ec);  // left by a process killed while extracting
  fs::remove(archive, ec);

  const auto started = std::chrono::steady_clock::now();
  std::string stage = "cannot download " + source->url;
  try {
    log::info("Downloading dataset " + name + " from " + source->url +
              (source->size >= 0 ? " (" + std::to_string(source->size) + " bytes)" : "") +
              " into " + shown_dir);
    HttpDownloadStats stats;
    std::string sha;
    for (int round = 0;; ++round) {
      stats = http_download(source->url, part.string(), source->size, opts, archive_name);
      stage = "the archive from " + source->url + " is not the expected one";
      if (source->size >= 0 && stats.final_size != source->size) {
        fs::remove(part, ec);
        throw DataError("size mismatch: got " + std::to_string(stats.final_size) +
                        " bytes, expected " + std::to_string(source->size) + " (from " +
                        source->origin + ")");
      }
      sha = sha256_file(part.string());
      if (source->sha256.empty() || sha == source->sha256) break;
      fs::remove(part, ec);
      fs::remove(part.string() + ".origin", ec);
      if (stats.resumed_from > 0 && round == 0) {
        // The kept prefix may belong to another version of the file: once more from scratch.
        log::warning(name + ": checksum mismatch after resuming; downloading again from the start");
        stage = "cannot download " + source->url;
        continue;
      }
      throw DataError("checksum mismatch: SHA-256 of the download is " + sha + ", expected " +
                      source->sha256 + " (from " +
                      (user_sha256.empty() ? source->origin : std::string("download_sha256")) +
                      ")");
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    log::info(name + ": downloaded " + std::to_string(stats.final_size) + " bytes (" +
              std::to_string(stats.bytes_fetched) + " fetched) in " + format_seconds(seconds) +
              "; SHA-256 " + sha +
              (source->sha256.empty() ? " (no checksum known to compare with; set "
                                        "download_sha256 to pin it)"
                                      : " (verified)"));
    fs::rename(part, archive);
    fs::remove(part.string() + ".origin", ec);
    if (fs::file_size(archive) == 0)
      throw DataError(source->url + " sent nothing (0 bytes); expected an archive of " + name +
                      ".inter (and .user / .item)");

    stage = "cannot unpack the archive from " + source->url;
    fs::create_directories(extracted);
    try {
      ExtractStats x =
          extract_archive_safely(archive.string(), extracted.string(), opts.max_extracted_bytes);
      log::info(name + ": extracted " + std::to_string(x.files) + " files, " +
                std::to_string(x.bytes) + " bytes");
    } catch (const DataError& e) {
      throw DataError(replace_all(e.what(), archive.string(), archive_name));
    }
    const fs::path content = content_root(extracted);
    rename_to_dataset(content, *source);
    if (!fs::is_regular_file(content / (name + ".inter")))
      throw DataError("the archive has no " + name +
                      ".inter (it holds: " + join(top_level_names(content), ", ") + ")");
    // One rename puts the complete folder in place (rename(2) may replace an empty folder).
    fs::rename(content, dir);
    fs::remove_all(staging, ec);
  } catch (const std::exception& e) {
    fs::remove_all(extracted, ec);
    fs::remove(archive, ec);
    std::string kept;
    if (fs::exists(part)) {
      kept = " The partial download (" + std::to_string(fs::file_size(part, ec)) +
             " bytes) is kept in " + staging.string() + "/ and will be resumed next time.";
    } else {
      fs::remove_all(staging, ec);
    }
    throw DataError("dataset " + name + ": " + stage + ": " + e.what() + ". " + by_hand + kept);
  }
  return dir.string();
}

}  // namespace recbole::data
