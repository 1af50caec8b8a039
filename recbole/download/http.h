#pragma once
// Fetching one URL into a file with libcurl: timeouts, retries with back-off, resuming a partial
// file with a Range request, a progress bar on a terminal. Proxies come from the usual
// variables (http_proxy, https_proxy, all_proxy, no_proxy), which libcurl reads itself.
#include <cstdint>
#include <string>

#include "recbole/download/download.h"

namespace recbole::data {

struct HttpDownloadStats {
  int64_t resumed_from = 0;   // bytes already in the file before the first request
  int64_t bytes_fetched = 0;  // body bytes received over all attempts
  int64_t final_size = 0;     // size of the file when done
  int attempts = 0;           // requests made
};

// Appends what is missing of `url` to `part_path` (created if absent): the bytes already there
// are kept and only the rest is requested (Range: bytes=N-, with If-Range when the server gave
// an ETag or Last-Modified), so an interrupted download resumes where it stopped. A server that
// ignores the range restarts the file from the beginning. `expected_size` (-1 = unknown) stops
// the download as soon as the server announces another size. Transient failures (no connection,
// stalls longer than opts.timeout_s, a body cut short, HTTP 5xx) are retried opts.retries times
// with exponential back-off, each retry resuming where the previous attempt stopped.
// Throws recbole::DataError whose message is the cause ("HTTP 404 Not Found", "timed out ...").
// After a transient failure the partial file is kept for a later call to resume; after a
// permanent one (HTTP 4xx, wrong size) it is deleted.
HttpDownloadStats http_download(const std::string& url, const std::string& part_path,
                                int64_t expected_size, const DownloadOptions& opts,
                                const std::string& label);

}  // namespace recbole::data
