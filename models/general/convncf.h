#pragma once
// ConvNCF (He et al. 2018) as RecBole defines it: the interaction map of a pair (u, i) is the
// outer product e_u e_iᵀ ([1, d, d], row a = user dimension a), fed through a CNN (RecBole's
// CNNLayers: Conv2d(c_k → c_{k+1}, kernel k_k, stride s_k) → ReLU per layer, libtorch's default
// initialisation as PyTorch's), summed over the spatial dimensions ([c_last]) and mapped by
// RecBole's MLPLayers([c_last, 1], dropout_prob, 'none') — Dropout → Linear — to a score.
// Embedding tables N(0, 1) (PyTorch's default; RecBole runs no init pass), or copied from a BPR
// checkpoint with train_method 'after_pretrain' (pre_model_path; same [rows, embedding_size]).
// Pairwise input. Loss: Σ_b softplus(−(s⁺_b − s⁻_b)) (RecBole's log(1 + exp(·)) summed, computed
// stably: the same values where RecBole's is finite) + reg₁(‖U‖ + ‖I‖) + reg₂ Σ‖weights of the
// convolutions and the Linear‖ (whole tables, unsquared). predict and full sort return the raw
// score; dropout draws from libtorch's generator.
//
// Evaluation: RecBole has no full sort (its trainer scores every (user, item) pair through
// predict). Here full_sort_predict runs the same network on blocks of one user × n items, with
// n · (d² + Σ_k c_{k+1} h_{k+1} w_{k+1}) ≤ 2²² floats (16 MiB of maps and activations per block,
// one item when a single one exceeds it; plus libtorch's convolution scratch), the blocks spread
// over the ThreadPool on the CPU. Cost: B · n_items CNN forwards, the bulk of an evaluation.
//
// Tensors: ids int64, scores float32, all on the device manager's device.
#include <vector>

#include "models/layers/mlp.h"
#include "models/model.h"

namespace recbole::models {

class ConvNCF : public Model {
 public:
  // cnn_channels must have one entry more than cnn_kernels and cnn_strides, start with 1 (one
  // interaction map) and fit embedding_size; reg_weights two entries; after_pretrain needs a
  // readable BPR checkpoint in pre_model_path. Otherwise a ConfigError naming the key.
  explicit ConvNCF(const ModelContext& ctx);

  // batch: users, items, neg_items → 0-dim loss.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // batch: users → [B, n_items] scores.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // batch: users, items → [B] scores.
  torch::Tensor predict(const data::Batch& batch) override;

 private:
  // Scores of rows (u_b, i_b) given their embeddings u, i ([N, d] each) → [N].
  torch::Tensor scores(const torch::Tensor& u, const torch::Tensor& i);

  int64_t dim_;
  double reg_embedding_, reg_network_;
  int64_t pair_floats_;  // d² + the activations of every layer, per pair
  // Every layer's stride equals its kernel (RecBole's defaults): the layers run as
  // layers::patch_conv2d, one GEMM each over the batch's patches, instead of Conv2d.
  bool patches_ = false;
  torch::Tensor user_embedding_, item_embedding_;
  std::vector<torch::nn::Conv2d> convs_;
  layers::MLP predict_layers_{nullptr};
};

}  // namespace recbole::models
