#pragma once
// Writing a whole file so that nothing the user had is lost on failure.
#include <cstddef>
#include <functional>
#include <string>

namespace recbole {

// Writes `bytes` to `path` through a temporary file beside it and a rename (creating the parent
// folders): a reader never sees half a file, and on any failure the old file is untouched and
// the temporary file removed. Throws Error("cannot write <what> <path>: <reason>"); `what`
// names the file for the message ("the checkpoint"), or is empty. durable: the file's data and
// the rename reach the disk (fsync of the file and of its folder) before this returns, so that a
// power cut also finds the old file or the new one; checkpoints ask for it.
void write_file_atomically(const std::string& path, const std::string& bytes,
                           const std::string& what = "", bool durable = false);

// The same, with the bytes handed to `sink` by `produce` in as many pieces as it likes: they
// go to the file as they come, without a copy of the whole file in memory (a 170 MB checkpoint
// serialised into a string first took twice as long to write).
using ByteSink = std::function<void(const void* data, size_t n)>;
void write_file_atomically(const std::string& path,
                           const std::function<void(const ByteSink& sink)>& produce,
                           const std::string& what = "", bool durable = false);

}  // namespace recbole
