#include "models/layers/context_embedding.h"

#include "models/layers/mlp.h"
#include "recbole/utils/error.h"

namespace recbole::models::layers {

ContextFields::ContextFields(const data::FeatureSchema& schema, bool towers) {
  for (const data::FeatureSpec& f : schema.fields) {
    if (!f.is_input() || (towers && f.side == data::FeatureSide::kInter)) continue;
    switch (f.type) {
      case data::FieldType::kToken:
        token.push_back(f);
        break;
      case data::FieldType::kTokenSeq:
        token_seq.push_back(f);
        break;
      case data::FieldType::kFloat:
        float_fields.push_back(f);
        break;
      case data::FieldType::kFloatSeq:
        float_seq.push_back(f);
        break;
    }
  }
  if (size() == 0) throw ConfigError("context model: the dataset has no feature field to embed");
}

std::vector<data::FeatureSide> ContextFields::sides() const {
  std::vector<data::FeatureSide> out;
  for (const auto* group : {&token_seq, &token, &float_seq, &float_fields})
    for (const data::FeatureSpec& f : *group) out.push_back(f.side);
  return out;
}

std::vector<std::string> ContextFields::names() const {
  std::vector<std::string> out;
  for (const auto* group : {&token_seq, &token, &float_seq, &float_fields})
    for (const data::FeatureSpec& f : *group) out.push_back(f.name);
  return out;
}

namespace {

torch::Tensor offsets_of(const std::vector<data::FeatureSpec>& fields, int64_t* total) {
  std::vector<int64_t> off;
  int64_t sum = 0;
  for (const data::FeatureSpec& f : fields) {
    off.push_back(sum);
    sum += f.num;
  }
  *total = sum;
  return torch::tensor(off, torch::kInt64);
}

const torch::Tensor& feature(const data::Batch& batch, const std::string& name) {
  auto it = batch.features.find(name);
  if (it == batch.features.end() || !it->second.defined())
    throw Error("context model: the batch has no feature field " + name);
  return it->second;
}

// Masked pooling of [B, L, w] element vectors with mask [B, L]: mean (eps 1e-8) or sum.
torch::Tensor pool(const torch::Tensor& e, const torch::Tensor& mask, bool sum) {
  torch::Tensor m = mask.unsqueeze(2).to(e.scalar_type());
  torch::Tensor s = (e * m).sum(1);
  if (sum) return s;
  return s / (m.sum(1) + 1e-8);
}

}  // namespace

ContextEmbeddingImpl::ContextEmbeddingImpl(const ContextFields& fields, int64_t width, bool seq_sum)
    : fields_(fields), width_(width), seq_sum_(seq_sum) {
  int64_t n = 0;
  if (!fields_.token.empty()) {
    token_offsets_ = register_buffer("token_offsets", offsets_of(fields_.token, &n));
    token_table_ = register_module("token_table", torch::nn::Embedding(n, width));
  }
  if (!fields_.float_fields.empty()) {
    float_offsets_ = register_buffer("float_offsets", offsets_of(fields_.float_fields, &n));
    float_table_ = register_module("float_table", torch::nn::Embedding(n, width));
  }
  for (const data::FeatureSpec& f : fields_.token_seq)
    seq_tables_.push_back(
        register_module("token_seq_" + f.name, torch::nn::Embedding(f.num, width)));
  for (const data::FeatureSpec& f : fields_.float_seq)
    float_seq_tables_.push_back(
        register_module("float_seq_" + f.name, torch::nn::Embedding(f.num, width)));
  for (torch::Tensor& t : tables()) {
    torch::NoGradGuard no_grad;
    torch::nn::init::xavier_normal_(t);
  }
}

std::vector<torch::Tensor> ContextEmbeddingImpl::tables() const {
  std::vector<torch::Tensor> out;
  if (token_table_) out.push_back(token_table_->weight);
  if (float_table_) out.push_back(float_table_->weight);
  for (const auto& t : seq_tables_) out.push_back(t->weight);
  for (const auto& t : float_seq_tables_) out.push_back(t->weight);
  return out;
}

torch::Tensor ContextEmbeddingImpl::forward(const data::Batch& batch) {
  std::vector<torch::Tensor> parts;
  for (size_t k = 0; k < fields_.token_seq.size(); ++k) {
    const torch::Tensor& ids = feature(batch, fields_.token_seq[k].name);  // [B, L]
    parts.push_back(pool(seq_tables_[k]->forward(ids), ids.ne(0), seq_sum_).unsqueeze(1));
  }
  if (!fields_.token.empty()) {
    std::vector<torch::Tensor> ids;
    for (const data::FeatureSpec& f : fields_.token) ids.push_back(feature(batch, f.name));
    torch::Tensor all = torch::stack(ids, 1) + token_offsets_.unsqueeze(0);  // [B, n_token]
    parts.push_back(token_table_->forward(all));
  }
  for (size_t k = 0; k < fields_.float_seq.size(); ++k) {
    const torch::Tensor& v = feature(batch, fields_.float_seq[k].name);  // [B, L, 2]
    torch::Tensor base = v.select(2, 0), index = v.select(2, 1).to(torch::kInt64);
    torch::Tensor e = float_seq_tables_[k]->forward(index) * base.unsqueeze(2);
    parts.push_back(pool(e, index.ne(0), false).unsqueeze(1));
  }
  if (!fields_.float_fields.empty()) {
    std::vector<torch::Tensor> values;
    for (const data::FeatureSpec& f : fields_.float_fields)
      values.push_back(feature(batch, f.name));
    torch::Tensor v = torch::stack(values, 1);  // [B, n_float]
    // Not discretised: every value uses row 1 of its field.
    torch::Tensor rows = float_table_->weight.index_select(0, float_offsets_ + 1);  // [n_float, w]
    parts.push_back(v.unsqueeze(2) * rows.unsqueeze(0));
  }
  return torch::cat(parts, 1);
}

FirstOrderLinearImpl::FirstOrderLinearImpl(const ContextFields& fields) {
  embedding_ = register_module("embedding", ContextEmbedding(fields, 1, /*seq_sum=*/true));
  bias_ = register_parameter("bias", torch::zeros({1}));
}

torch::Tensor FirstOrderLinearImpl::forward(const data::Batch& batch) {
  return embedding_->forward(batch).sum(1) + bias_;
}

ContextMLPImpl::ContextMLPImpl(std::vector<int64_t> sizes, double dropout, std::string activation,
                               bool batch_norm)
    : dropout_(dropout), activation_(std::move(activation)) {
  check_activation(activation_, "activation");
  for (size_t k = 0; k + 1 < sizes.size(); ++k) {
    linears_.push_back(
        register_module("linear" + std::to_string(k), torch::nn::Linear(sizes[k], sizes[k + 1])));
    if (batch_norm)
      norms_.push_back(
          register_module("bn" + std::to_string(k), torch::nn::BatchNorm1d(sizes[k + 1])));
  }
}

torch::Tensor ContextMLPImpl::forward(torch::Tensor x) {
  for (size_t k = 0; k < linears_.size(); ++k) {
    if (dropout_ > 0) x = torch::dropout(x, dropout_, is_training());
    x = linears_[k]->forward(x);
    if (!norms_.empty()) {
      if (is_training() && x.size(0) == 1)
        throw Error("context model: a training batch of 1 row cannot be batch-normalised");
      x = norms_[k]->forward(x);
    }
    x = activate(x, activation_);
  }
  return x;
}

void xavier_init_context(torch::nn::Module& module, bool linears) {
  torch::NoGradGuard no_grad;
  for (const auto& m : module.modules(/*include_self=*/false)) {
    if (auto* e = m->as<torch::nn::Embedding>()) {
      torch::nn::init::xavier_normal_(e->weight);
    } else if (auto* l = m->as<torch::nn::Linear>()) {
      if (!linears) continue;
      torch::nn::init::xavier_normal_(l->weight);
      if (l->bias.defined()) l->bias.zero_();
    }
  }
}

torch::Tensor fm_interaction(const torch::Tensor& e, bool reduce_sum) {
  torch::Tensor square_of_sum = e.sum(1).pow(2);  // [B, d]
  torch::Tensor sum_of_square = e.pow(2).sum(1);
  torch::Tensor out = square_of_sum - sum_of_square;
  if (reduce_sum) out = out.sum(1, /*keepdim=*/true);
  return 0.5 * out;
}

}  // namespace recbole::models::layers
