#pragma once
// Random: a baseline that ranks items at random. Unlike RecBole (one random vector shared by all
// users of a batch, drawn anew per batch), every user gets an independent ranking that depends
// only on the seed and the user id: score(u, i) is the i-th draw of a SplitMix64 stream keyed by
// (seed, u), so the same user gets the same scores in any batch, block size or device.
#include "models/model.h"

namespace recbole::models {

class Random : public Model {
 public:
  explicit Random(const ModelContext& ctx);

  void fit() override {}  // nothing to learn
  // [B, n_items] float32 in [0, 1) on the device.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;

 private:
  torch::Tensor seed_;  // [1] int64 buffer: the config seed the streams are keyed by
};

}  // namespace recbole::models
