#include "models/context/context_model.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "kernels/bce.h"
#include "kernels/fm.h"
#include "models/layers/backward_parts.h"
#include "models/layers/dropout.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/runtime/fast_path.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"

namespace recbole::models {

ContextModel::ContextModel(std::string name, const ModelContext& ctx, bool towers)
    : Model(name, ctx),
      fields_(ctx.need<data::FeatureSchema>(), towers),
      embedding_size_(keys::embedding_size().get(ctx.config)),
      num_fields_(fields_.size()) {
  embedding_ = register_module("embedding", layers::ContextEmbedding(fields_, embedding_size_));
  first_order_ = register_module("first_order", layers::FirstOrderLinear(fields_));
  const data::FeatureSchema& schema = ctx.need<data::FeatureSchema>();
  uid_field_ = schema.uid_field;
  iid_field_ = schema.iid_field;
  eval_rows_ = ctx.config.get_int("eval_batch_size");
  for (const data::FeatureSpec& f : schema.fields) {
    if (!f.is_input() || f.name == uid_field_ || f.name == iid_field_) continue;
    if (f.side == data::FeatureSide::kUser) user_fields_.push_back(f.name);
    if (f.side == data::FeatureSide::kInter) inter_fields_.push_back(f.name);
  }
  if (const ItemFeatureColumns* items = ctx.parts.find<ItemFeatureColumns>()) {
    item_columns_given_ = true;
    for (const auto& [field, column] : items->columns)
      item_columns_.emplace_back(field, ctx.device.place(column));
  }
}

std::vector<int64_t> ContextModel::mlp_sizes(const ModelContext& ctx, int64_t input_width) {
  std::vector<int64_t> sizes{input_width};
  for (int64_t h : keys::mlp_hidden_size().get(ctx.config)) sizes.push_back(h);
  return sizes;
}

std::vector<int64_t> ContextModel::field_map(const ModelContext& ctx,
                                             const std::vector<std::string>& names) const {
  std::vector<int64_t> field(names.size(), -1);
  if (ctx.config.is_null("fields")) {
    std::iota(field.begin(), field.end(), 0);
    return field;
  }
  const std::string where = ctx.config.source("fields") + ": " + name() + ": fields";
  std::set<int64_t> ids;
  for (const auto& entry : ctx.config.node("fields")) {
    int64_t id = -1;
    if (!entry.first.IsScalar() || !YAML::convert<int64_t>::decode(entry.first, id) || id < 0)
      throw ConfigError(where + ": key " + YAML::Dump(entry.first) +
                        "; expected a field id 0, 1, … mapped to a list of features");
    std::vector<std::string> listed;
    if (entry.second.IsScalar())
      listed.push_back(entry.second.as<std::string>());
    else if (entry.second.IsSequence())
      for (const auto& n : entry.second) listed.push_back(n.as<std::string>());
    else
      throw ConfigError(where + "." + std::to_string(id) + ": expected a list of features");
    for (const std::string& feature : listed) {
      const auto at = std::find(names.begin(), names.end(), feature);
      if (at == names.end()) {
        log::warning(where + "." + std::to_string(id) + ": " + feature +
                     " is not a feature of this run; skipped");
        continue;
      }
      int64_t& f = field[static_cast<size_t>(at - names.begin())];
      if (f >= 0)
        throw ConfigError(where + ": " + feature + " is in field " + std::to_string(f) +
                          " and in field " + std::to_string(id) + "; a feature has one field");
      f = id;
      ids.insert(id);
    }
  }
  auto joined = [](const auto& values, auto text) {
    std::string all;
    for (const auto& v : values) all += (all.empty() ? "" : ", ") + text(v);
    return all;
  };
  for (size_t k = 0; k < names.size(); ++k)
    if (field[k] < 0)
      throw ConfigError(where + ": the feature " + names[k] +
                        " is in no field; list every feature of the run (" +
                        joined(names, [](const std::string& n) { return n; }) + ")");
  if (*ids.rbegin() != static_cast<int64_t>(ids.size()) - 1)
    throw ConfigError(where + ": the field ids that hold features are " +
                      joined(ids, [](int64_t id) { return std::to_string(id); }) +
                      "; expected 0.." + std::to_string(ids.size() - 1));
  return field;
}

config::Key field_map_key() {
  return config::Key("fields", config::KeyType::kMap)
      .null()
      .help(
          "Field map {id: [features]} with ids 0..K-1 and every feature in one field; null: "
          "every feature its own field");
}

void ContextModel::finish(bool init_linears) {
  layers::xavier_init_context(*this, init_linears);
  to(device_manager().device());
}

torch::Tensor ContextModel::row_loss(const data::Batch& batch) {
  torch::Tensor z = logits(batch);
  const torch::Tensor& y = batch.labels;
  // PyTorch's BCELoss: each log clamped at -100, and a backward that stays finite where the
  // probability saturates at 0 or 1 (clamping log(z) by hand gives 0 · inf = NaN there).
  if (probability_output()) return torch::binary_cross_entropy(z, y);
  return torch::binary_cross_entropy_with_logits(z, y);
}

torch::Tensor ContextModel::calculate_loss(const data::Batch& batch) {
  torch::Tensor loss = row_loss(batch);
  torch::Tensor reg = regularizer();
  return reg.defined() ? loss + reg : loss;
}

torch::Tensor ContextModel::predict(const data::Batch& batch) {
  if (!torch::GradMode::is_enabled() && closed_form_applies()) {
    // Evaluation of LR and FM: the closed form's passes, not the autograd path's some twenty
    // operations (half of FM's validation time).
    closed_form_logits(batch);
    const std::vector<float>& z = closed_form_buffers_.z;
    return torch::sigmoid(torch::tensor(z));
  }
  torch::Tensor z = logits(batch);
  return probability_output() ? z : torch::sigmoid(z);
}

bool ContextModel::closed_form_applies() const {
  const ClosedForm form = closed_form();
  if (!fast_paths_enabled() || !form.first_order) return false;
  if (form.deep && deep_part() == nullptr) return false;
  for (const torch::Tensor& p : parameters())
    if (!p.device().is_cpu() || p.scalar_type() != torch::kFloat32) return false;
  return true;
}

void ContextModel::closed_form_logits(const data::Batch& batch) {
  if (layers::DirectMLP* deep = deep_part()) deep->prepare();
  closed_form_logits(batch, closed_form_buffers_);
}

void ContextModel::closed_form_logits(const data::Batch& batch, ClosedFormBuffers& buf) const {
  const int64_t b = batch.users.size(0), f = num_fields_, d = embedding_size_;
  buf.z.resize(static_cast<size_t>(b));
  const ClosedForm form = closed_form();
  if (!form.fm && !form.deep) {
    first_order_->forward_direct(batch, buf.z.data());
    return;
  }
  // E in the first-order part's walk over the ids.
  buf.e.resize(static_cast<size_t>(b * f * d));
  first_order_->forward_direct(batch, buf.z.data(), embedding_.get(), buf.e.data());
  if (form.fm) {
    buf.sum.resize(static_cast<size_t>(b * d));
    buf.squares.resize(static_cast<size_t>(d));
    kernels::fm_logits(buf.e.data(), b, f, d, buf.sum.data(), buf.squares.data(), buf.z.data());
  }
  if (form.deep)
    deep_part()->forward(torch::from_blob(buf.e.data(), {b, f * d}, torch::kFloat32), is_training(),
                         buf.z.data(), buf.deep);
}

double ContextModel::bce_with_logits(const data::Batch& batch, int64_t rows,
                                     ClosedFormBuffers& buf) {
  const int64_t b = batch.users.size(0);
  buf.dz.resize(static_cast<size_t>(b));
  const torch::Tensor y = batch.labels.contiguous();
  return kernels::bce_with_logits(buf.z.data(), y.data_ptr<float>(), b, rows, buf.dz.data());
}

torch::Tensor ContextModel::closed_form_backward(const data::Batch& batch) {
  if (closed_form().deep) return deep_closed_form_backward(batch);
  torch::NoGradGuard no_grad;
  const bool fm = closed_form().fm;
  const int64_t b = batch.users.size(0), f = num_fields_, d = embedding_size_;
  ClosedFormBuffers& buf = closed_form_buffers_;
  closed_form_logits(batch);
  const double loss = bce_with_logits(batch, b, buf);
  if (!fm) {
    first_order_->add_gradient(batch, buf.dz.data());
  } else {
    kernels::fm_gradient(buf.e.data(), buf.sum.data(), buf.dz.data(), nullptr, b, f, d);
    first_order_->add_gradient(batch, buf.dz.data(), embedding_.get(), buf.e.data());
  }
  return torch::tensor(static_cast<float>(loss / static_cast<double>(b)));
}

torch::Tensor ContextModel::deep_closed_form_backward(const data::Batch& batch) {
  torch::NoGradGuard no_grad;
  layers::DirectMLP& deep = *deep_part();
  deep.prepare();
  const bool fm = closed_form().fm;
  const int64_t rows = batch.users.size(0), f = num_fields_, d = embedding_size_;
  const int64_t parts = (rows + kPartRows - 1) / kPartRows;
  const std::vector<uint64_t> keys = layers::draw_part_keys(parts);  // backward_parts' keys
  part_buffers_.resize(static_cast<size_t>(parts));
  std::vector<data::Batch> part_batches(static_cast<size_t>(parts));
  std::vector<double> losses(static_cast<size_t>(parts));
  layers::on_pool(parts, [&](size_t k) {
    torch::NoGradGuard no_grad_here;  // grad mode is per thread
    layers::DropoutKeyScope key(keys[k]);
    const int64_t start = static_cast<int64_t>(k) * kPartRows;
    const data::Batch& part = part_batches[k] =
        batch.narrow(start, std::min(kPartRows, rows - start));
    ClosedFormBuffers& buf = part_buffers_[k];
    closed_form_logits(part, buf);
    losses[k] = bce_with_logits(part, rows, buf);
    deep.backward(buf.dz.data(), buf.deep);
    // dloss/dE: the deep part's, plus the FM term's when the form has one, written over E.
    const float* dx = buf.deep.dx.data_ptr<float>();
    const int64_t n = part.users.size(0);
    if (fm)
      kernels::fm_gradient(buf.e.data(), buf.sum.data(), buf.dz.data(), dx, n, f, d);
    else
      std::copy(dx, dx + n * f * d, buf.e.data());
  });
  // The parts' gradients in part order, on this thread.
  double loss = 0.0;
  for (size_t k = 0; k < part_batches.size(); ++k) {
    ClosedFormBuffers& buf = part_buffers_[k];
    first_order_->add_gradient(part_batches[k], buf.dz.data(), embedding_.get(), buf.e.data());
    deep.add_gradients(buf.deep);
    loss += losses[k];
  }
  return torch::tensor(static_cast<float>(loss / static_cast<double>(rows)));
}

bool ContextModel::trains_in_parts() const {
  const std::vector<torch::Tensor> params = parameters();
  if (std::any_of(params.begin(), params.end(),
                  [](const torch::Tensor& p) { return !p.device().is_cpu(); }))
    return false;
  for (const auto& m : modules(/*include_self=*/false))
    if (m->as<torch::nn::BatchNorm1d>()) return false;
  return true;
}

torch::Tensor ContextModel::train_step(const data::Batch& batch, TrainStep& step) {
  if (closed_form_applies()) {
    step.optimizer().zero_grad();
    torch::Tensor loss = closed_form_backward(batch);
    step.finish_gradients();
    step.optimizer().step();
    return loss;
  }
  if (!trains_in_parts()) return Model::train_step(batch, step);
  const int64_t rows = batch.size();
  const torch::Tensor total = layers::backward_parts(
      parameters(), (rows + kPartRows - 1) / kPartRows,
      [&](int64_t k) {
        const int64_t start = k * kPartRows, n = std::min(kPartRows, rows - start);
        torch::Tensor loss =
            row_loss(batch.narrow(start, n)) * (static_cast<double>(n) / static_cast<double>(rows));
        if (k > 0) return loss;
        torch::Tensor reg = regularizer();  // once per batch, with the first part
        return reg.defined() ? loss + reg : loss;
      },
      [&](const torch::Tensor& loss) { device_manager().check(loss, name(), "loss"); });
  step.finish_gradients();
  step.optimizer().step();
  return total;
}

torch::Tensor ContextModel::full_sort_predict(const data::Batch& batch) {
  if (!inter_fields_.empty())
    throw ConfigError("model: " + name() + " reads the interaction field " + inter_fields_[0] +
                      ", which a user and an item that never met have no value for, so it "
                      "cannot rank every item (eval_args mode full, uniN or popN); drop the "
                      "field from load_col (or numerical_features), or evaluate with mode "
                      "labeled");
  if (!item_columns_given_)
    throw Error(name() +
                ": full_sort_predict needs the item feature columns, which the context "
                "pipeline hands to the model (ModelContext::item_features)");
  const int64_t users = batch.users.size(0), n = n_items();
  const auto ids = batch.users.options();
  const torch::Tensor every_item = torch::arange(n, ids);
  // Whole users per predict call, so that each user's row of scores is one slice.
  const int64_t step = std::max<int64_t>(1, eval_rows_ / std::max<int64_t>(n, 1));
  std::vector<torch::Tensor> parts;
  for (int64_t u0 = 0; u0 < users; u0 += step) {
    const int64_t w = std::min(step, users - u0);
    data::Batch grid;
    grid.users = batch.users.narrow(0, u0, w).repeat_interleave(n);
    grid.items = every_item.repeat({w});
    grid.features[uid_field_] = grid.users;
    grid.features[iid_field_] = grid.items;
    for (const std::string& field : user_fields_) {
      const auto column = batch.features.find(field);
      if (column == batch.features.end())
        throw Error(name() + ": full_sort_predict's batch lacks the user field " + field);
      grid.features[field] = column->second.narrow(0, u0, w).repeat_interleave(n, 0);
    }
    for (const auto& [field, column] : item_columns_) {
      std::vector<int64_t> times(static_cast<size_t>(column.dim()), 1);
      times[0] = w;
      grid.features[field] = column.repeat(times);
    }
    parts.push_back(predict(grid).reshape({w, n}));
  }
  if (parts.empty()) return torch::empty({0, n}, ids.dtype(torch::kFloat32));
  return parts.size() == 1 ? parts[0] : torch::cat(parts, 0);
}

}  // namespace recbole::models
