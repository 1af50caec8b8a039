#pragma once
// Writing a whole file so that nothing the user had is lost on failure.
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

}  // namespace recbole
