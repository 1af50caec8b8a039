#include "models/general/convncf.h"

#include <algorithm>
#include <string>

#include <torch/torch.h>

#include "models/layers/key_checks.h"
#include "models/layers/patch_conv.h"
#include "models/layers/pretrained.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models {
namespace {

// Floats of the maps and activations of one full-sort block (16 MiB).
constexpr int64_t kConvNCFBlockFloats = int64_t{1} << 22;

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

}  // namespace

ConvNCF::ConvNCF(const ModelContext& ctx)
    : Model("ConvNCF", ctx), dim_(keys::embedding_size().get(ctx.config)) {
  const config::Config& c = ctx.config;
  const std::vector<double> reg =
      layers::weight_list(c, "ConvNCF", "reg_weights", {"embeddings", "network"});
  reg_embedding_ = reg[0];
  reg_network_ = reg[1];
  const std::vector<int64_t> channels = c.get_int_list("cnn_channels");
  const std::vector<int64_t> kernels = c.get_int_list("cnn_kernels");
  const std::vector<int64_t> strides = c.get_int_list("cnn_strides");
  if (kernels.size() != strides.size() || channels.size() != kernels.size() + 1)
    throw ConfigError(c.source("cnn_channels") + ": ConvNCF: cnn_channels " + list_text(channels) +
                      ", cnn_kernels " + list_text(kernels) + " and cnn_strides " +
                      list_text(strides) +
                      ": expected one channel count more than kernels and strides");
  if (channels.front() != 1)
    throw ConfigError(c.source("cnn_channels") + ": ConvNCF: cnn_channels: expected 1 input " +
                      "channel first (one interaction map), got " + list_text(channels));
  // Each layer's output side: (h − kernel) / stride + 1, which needs h ≥ kernel.
  int64_t side = dim_;
  pair_floats_ = dim_ * dim_;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (side < kernels[k])
      throw ConfigError(c.source("cnn_kernels") + ": ConvNCF: cnn_kernels " + list_text(kernels) +
                        " with cnn_strides " + list_text(strides) + ": layer " +
                        std::to_string(k + 1) + " gets a " + std::to_string(side) + "×" +
                        std::to_string(side) + " map from embedding_size " + std::to_string(dim_) +
                        ", smaller than its kernel");
    side = (side - kernels[k]) / strides[k] + 1;
    pair_floats_ += channels[k + 1] * side * side;
  }
  // RecBole's order of construction: tables, convolutions, predictor; on the CPU from the
  // seeded generator, then moved once.
  user_embedding_ =
      register_parameter("user_embedding", torch::empty({ctx.n_users, dim_}).normal_(0.0, 1.0));
  item_embedding_ =
      register_parameter("item_embedding", torch::empty({ctx.n_items, dim_}).normal_(0.0, 1.0));
  patches_ = kernels == strides;
  for (size_t k = 0; k < kernels.size(); ++k)
    convs_.push_back(register_module(
        "conv" + std::to_string(k),
        torch::nn::Conv2d(torch::nn::Conv2dOptions(channels[k], channels[k + 1], kernels[k])
                              .stride(strides[k]))));
  predict_layers_ = register_module(
      "predict_layers",
      layers::MLP(std::vector<int64_t>{channels.back(), 1}, keys::dropout_prob().get(c), "none"));
  if (c.get_string("train_method") == "after_pretrain") {
    if (c.get_string("pre_model_path").empty())
      throw ConfigError(c.source("pre_model_path") +
                        ": ConvNCF: pre_model_path: empty; train_method after_pretrain expects "
                        "a BPR checkpoint");
    layers::load_pretrained_tables(
        c, "pre_model_path", "ConvNCF", "BPR",
        {{"user_embedding", user_embedding_}, {"item_embedding", item_embedding_}});
  }
  to(ctx.device.device());
}

torch::Tensor ConvNCF::scores(const torch::Tensor& u, const torch::Tensor& i) {
  // map[b][a][c] = u[b][a] · i[b][c]: one product per entry, the same in every batching.
  torch::Tensor x = u.unsqueeze(2) * i.unsqueeze(1);  // [N, d, d]
  if (patches_) {                                     // channels last: [N, h, w, c]
    x = x.unsqueeze(3);
    for (torch::nn::Conv2d& conv : convs_)
      x = torch::relu(layers::patch_conv2d(x, conv->weight, conv->bias));
    return predict_layers_->forward(x.sum({1, 2})).squeeze(1);
  }
  x = x.unsqueeze(1);  // [N, 1, d, d]
  for (torch::nn::Conv2d& conv : convs_) x = torch::relu(conv->forward(x));
  return predict_layers_->forward(x.sum({2, 3})).squeeze(1);
}

torch::Tensor ConvNCF::calculate_loss(const data::Batch& batch) {
  const torch::Tensor u = user_embedding_.index_select(0, batch.users);
  // Two forwards, each with its own dropout mask, as RecBole.
  const torch::Tensor pos = scores(u, item_embedding_.index_select(0, batch.items));
  const torch::Tensor neg = scores(u, item_embedding_.index_select(0, batch.neg_items));
  torch::Tensor network = torch::zeros({}, pos.options());
  for (const torch::nn::Conv2d& conv : convs_) network = network + conv->weight.norm();
  for (const torch::nn::Linear& linear : predict_layers_->linears())
    network = network + linear->weight.norm();
  return torch::softplus(neg - pos).sum() +
         reg_embedding_ * (user_embedding_.norm() + item_embedding_.norm()) +
         reg_network_ * network;
}

torch::Tensor ConvNCF::predict(const data::Batch& batch) {
  return scores(user_embedding_.index_select(0, batch.users),
                item_embedding_.index_select(0, batch.items));
}

torch::Tensor ConvNCF::full_sort_predict(const data::Batch& batch) {
  torch::NoGradGuard no_grad;
  const torch::Tensor& users = batch.users;
  const int64_t rows = users.size(0);
  torch::Tensor out = torch::empty({rows, n_items()}, user_embedding_.options());
  const torch::Tensor u = user_embedding_.index_select(0, users);  // [B, d]
  const int64_t block = std::max<int64_t>(1, kConvNCFBlockFloats / pair_floats_);
  const int64_t blocks_per_user = (n_items() + block - 1) / block;
  // One task per (user, block of items); each writes its own slice of `out`, so the result does
  // not depend on the thread count, nor on the other users of the batch.
  auto task = [&](int64_t t, int) {
    torch::NoGradGuard task_no_grad;  // grad mode is per thread
    const int64_t b = t / blocks_per_user;
    const int64_t i0 = (t % blocks_per_user) * block;
    const int64_t n = std::min(block, n_items() - i0);
    out[b].narrow(0, i0, n).copy_(
        scores(u[b].unsqueeze(0).expand({n, dim_}), item_embedding_.narrow(0, i0, n)));
  };
  const int64_t n_tasks = rows * blocks_per_user;
  // In training mode dropout draws from the generator: one thread, in task order, so that a
  // seed repeats.
  if (out.is_cuda() || is_training()) {
    for (int64_t t = 0; t < n_tasks; ++t) task(t, 0);
    return out;
  }
  BlasThreadsScope one_blas_thread(1);  // each worker runs its own convolutions
  parallel_for(n_tasks, task);
  return out;
}

RECBOLE_REGISTER_MODEL(ConvNCF) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"ConvNCF",
       "general",
       InputType::kPairwise,
       "Convolutional NCF: a CNN over the outer product of user and item embeddings",
       {keys::embedding_size().decl("Dimension of user and item embeddings"),
        layers::sizes_key("cnn_channels")
            .help("Channels of the CNN: 1 (the interaction map), then one per layer"),
        layers::sizes_key("cnn_kernels").help("Square kernel size of each convolution"),
        layers::sizes_key("cnn_strides").help("Stride of each convolution"),
        keys::dropout_prob().decl("Dropout before the output Linear, in [0, 1)"),
        Key("reg_weights", KeyType::kFloatList)
            .min(0)
            .help("Weights of ‖U‖ + ‖I‖ and of the network's weight norms (two)"),
        Key("train_method", KeyType::kString)
            .choices({"no_pretrain", "after_pretrain"})
            .help("after_pretrain: user and item tables from the BPR checkpoint pre_model_path"),
        Key("pre_model_path", KeyType::kString)
            .help("BPR checkpoint read with train_method after_pretrain")},
       [](const ModelContext& ctx) { return std::make_shared<ConvNCF>(ctx); }});
}

}  // namespace recbole::models
