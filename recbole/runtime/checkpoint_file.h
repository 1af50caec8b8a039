#pragma once
// Checkpoint files (the best model and resume checkpoints): libtorch's archive, then a trailer
// that lets a reader tell a whole file from a damaged one before libtorch parses it.
//
// libtorch's readers trust the archive: a checkpoint cut short or with flipped bytes can make
// torch::jit::load crash the process (libtorch 1.13 segfaults in its TorchScript type parser
// on some such files) instead of throwing. So every checkpoint ends with 24 bytes, little-endian:
//   u64 payload size | u32 CRC-32 (zlib) of the payload | u32 trailer version | "RBCKSUM\n"
// and a reader checks size and checksum first: a damaged file is an Error naming it, and only a
// file as it was written reaches libtorch. The payload alone is an ordinary libtorch archive.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "recbole/utils/atomic_write.h"

namespace recbole::trainer {

// Bumped when the trailer's layout changes; a newer one is refused by name.
constexpr uint32_t kCheckpointTrailerVersion = 1;
constexpr size_t kCheckpointTrailerBytes = 24;

// Produces a file's bytes into a sink (recbole/utils/atomic_write.h).
using ByteProducer = std::function<void(const ByteSink& sink)>;

// The bytes of `archive` followed by the trailer, produced as they are serialised (no copy of
// the whole file in memory). For write_file_atomically or the CheckpointWriter.
ByteProducer checkpoint_bytes(std::shared_ptr<torch::serialize::OutputArchive> archive);

// Checks the trailer and the checksum of the checkpoint at `path`, then loads its archive
// (tensors onto `device`, or where they were saved). Throws Error naming `what` ("checkpoint",
// "resume checkpoint") and `path` when the file is missing, cut short, damaged, not a
// recbole-cpp checkpoint, or from a newer trailer version; an archive that libtorch still
// cannot read (a checksum cannot tell a file written by another program) is an Error too.
void load_checkpoint_archive(const std::string& path, const std::string& what,
                             torch::serialize::InputArchive& archive,
                             std::optional<torch::Device> device = std::nullopt);

}  // namespace recbole::trainer
