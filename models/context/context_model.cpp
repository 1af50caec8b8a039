#include "models/context/context_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

const data::FeatureSchema& context_schema(const ModelContext& ctx, const std::string& model) {
  if (ctx.features == nullptr)
    throw ConfigError("model: " + model +
                      " is a context model and needs the feature fields that the context task "
                      "pipeline prepares");
  return *ctx.features;
}

ContextModel::ContextModel(std::string name, const ModelContext& ctx, bool towers)
    : Model(name, ctx),
      fields_(context_schema(ctx, name), towers),
      embedding_size_(ctx.config.get_int("embedding_size")),
      num_fields_(fields_.size()) {
  embedding_ = register_module("embedding", layers::ContextEmbedding(fields_, embedding_size_));
  first_order_ = register_module("first_order", layers::FirstOrderLinear(fields_));
}

std::vector<int64_t> ContextModel::mlp_sizes(const ModelContext& ctx, int64_t input_width) {
  std::vector<int64_t> sizes{input_width};
  for (int64_t h : ctx.config.get_int_list("mlp_hidden_size")) sizes.push_back(h);
  return sizes;
}

void ContextModel::refuse_field_map(const ModelContext& ctx) const {
  if (!ctx.config.is_null("fields"))
    throw ConfigError(ctx.config.source("fields") + ": " + name() +
                      ": fields: a field map is a RecBole option not supported yet; expected null "
                      "(every feature its own field)");
}

config::Key field_map_key() {
  return config::Key("fields", config::KeyType::kMap)
      .null()
      .help("Field map {id: [features]} (only null, every feature its own field, is supported)");
}

void ContextModel::finish(bool init_linears) {
  layers::xavier_init_context(*this, init_linears);
  to(device_manager().device());
}

torch::Tensor ContextModel::calculate_loss(const data::Batch& batch) {
  torch::Tensor z = logits(batch);
  const torch::Tensor& y = batch.labels;
  torch::Tensor loss;
  if (probability_output()) {
    // PyTorch's BCELoss: each log clamped at -100, and a backward that stays finite where the
    // probability saturates at 0 or 1 (clamping log(z) by hand gives 0 · inf = NaN there).
    loss = torch::binary_cross_entropy(z, y);
  } else {
    loss = torch::binary_cross_entropy_with_logits(z, y);
  }
  torch::Tensor reg = regularizer();
  return reg.defined() ? loss + reg : loss;
}

torch::Tensor ContextModel::predict(const data::Batch& batch) {
  torch::Tensor z = logits(batch);
  return probability_output() ? z : torch::sigmoid(z);
}

bool ContextModel::closed_form_applies() const {
  if (closed_form() == ClosedForm::kNone) return false;
  for (const torch::Tensor& p : parameters())
    if (!p.device().is_cpu() || p.scalar_type() != torch::kFloat32) return false;
  return true;
}

torch::Tensor ContextModel::closed_form_backward(const data::Batch& batch) {
  torch::NoGradGuard no_grad;
  const bool fm = closed_form() == ClosedForm::kFM;
  const int64_t b = batch.users.size(0), f = num_fields_, d = embedding_size_;
  ClosedFormBuffers& buf = closed_form_buffers_;
  buf.z.resize(static_cast<size_t>(b));
  buf.dz.resize(static_cast<size_t>(b));
  first_order_->forward_direct(batch, buf.z.data());
  if (fm) {
    // z += ½ Σ_k (S_k² − Σ_f E_fk²), S = Σ_f E (RecBole's FM term).
    buf.e.resize(static_cast<size_t>(b * f * d));
    buf.sum.resize(static_cast<size_t>(b * d));
    embedding_->forward_direct(batch, buf.e.data());
    // Per dimension first, then over the dimensions (as fm_interaction): the inner loops run
    // along k and vectorise; a running scalar sum over F·d would be one long dependency chain.
    buf.squares.resize(static_cast<size_t>(d));
    float* __restrict squares = buf.squares.data();
    for (int64_t r = 0; r < b; ++r) {
      const float* __restrict e = buf.e.data() + r * f * d;
      float* __restrict sum = buf.sum.data() + r * d;
      for (int64_t k = 0; k < d; ++k) {
        sum[k] = e[k];
        squares[k] = e[k] * e[k];
      }
      for (int64_t c = 1; c < f; ++c)
        for (int64_t k = 0; k < d; ++k) {
          sum[k] += e[c * d + k];
          squares[k] += e[c * d + k] * e[c * d + k];
        }
      float term = 0.0f;
      for (int64_t k = 0; k < d; ++k) term += sum[k] * sum[k] - squares[k];
      buf.z[static_cast<size_t>(r)] += 0.5f * term;
    }
  }
  // Mean binary cross-entropy with logits (PyTorch's stable form); dloss/dz = (σ(z) − y) / B.
  const torch::Tensor y = batch.labels.contiguous();
  const float* ys = y.data_ptr<float>();
  double loss = 0.0;
  for (int64_t r = 0; r < b; ++r) {
    const float z = buf.z[static_cast<size_t>(r)];
    loss += std::max(z, 0.0f) - z * ys[r] + std::log1p(std::exp(-std::abs(z)));
    buf.dz[static_cast<size_t>(r)] = (1.0f / (1.0f + std::exp(-z)) - ys[r]) / static_cast<float>(b);
  }
  first_order_->add_gradient(batch, buf.dz.data());
  if (fm) {
    // d/dE[r, c] of dz · fm = dz[r] · (S[r] − E[r, c]), written over E.
    for (int64_t r = 0; r < b; ++r) {
      float* __restrict e = buf.e.data() + r * f * d;
      const float* __restrict sum = buf.sum.data() + r * d;
      const float g = buf.dz[static_cast<size_t>(r)];
      for (int64_t c = 0; c < f; ++c)
        for (int64_t k = 0; k < d; ++k) e[c * d + k] = g * (sum[k] - e[c * d + k]);
    }
    embedding_->add_gradient(batch, buf.e.data());
  }
  return torch::tensor(static_cast<float>(loss / static_cast<double>(b)));
}

torch::Tensor ContextModel::train_step(const data::Batch& batch, TrainStep& step) {
  if (!closed_form_applies()) return Model::train_step(batch, step);
  step.optimizer().zero_grad();
  torch::Tensor loss = closed_form_backward(batch);
  step.finish_gradients();
  step.optimizer().step();
  return loss;
}

torch::Tensor ContextModel::full_sort_predict(const data::Batch&) {
  throw ConfigError("model: " + name() +
                    " is a context model: it scores labelled rows (eval_args mode labeled); "
                    "ranking all items for a user is not supported yet");
}

}  // namespace recbole::models
