#include "models/layers/context_embedding.h"

#include <algorithm>
#include <numeric>

#include "models/layers/backward_parts.h"
#include "models/layers/dropout.h"
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
    // gather_rows: inside a training part (layers::backward_parts) its gradient holds the
    // part's rows only, not a zeroed copy of the whole table per part.
    parts.push_back(layers::gather_rows(token_table_->weight, all.reshape(-1))
                        .view({all.size(0), all.size(1), width_}));
  }
  for (size_t k = 0; k < fields_.float_seq.size(); ++k) {
    const torch::Tensor& v = feature(batch, fields_.float_seq[k].name);  // [B, L, 2]
    torch::Tensor base = v.select(2, 0), index = v.select(2, 1).to(torch::kInt64);
    torch::Tensor e = float_seq_tables_[k]->forward(index) * base.unsqueeze(2);
    parts.push_back(pool(e, index.ne(0), false).unsqueeze(1));
  }
  for (size_t j = 0; j < fields_.float_fields.size(); ++j) {
    const data::FeatureSpec& f = fields_.float_fields[j];
    const torch::Tensor& v = feature(batch, f.name);                                    // [B]
    const torch::Tensor offset = float_offsets_.narrow(0, static_cast<int64_t>(j), 1);  // [1]
    // Discretised: the bucket id's row; otherwise the value times row 1 of the field.
    parts.push_back(f.discretised
                        ? float_table_->forward(v + offset).unsqueeze(1)
                        : v.view({-1, 1, 1}) *
                              float_table_->weight.index_select(0, offset + 1).view({1, 1, -1}));
  }
  return torch::cat(parts, 1);
}

namespace {

// The gradient of `table` (float32 CPU), allocated as zeros when undefined.
float* table_gradient(torch::Tensor& table) {
  torch::Tensor& g = table.mutable_grad();
  if (!g.defined()) g = torch::zeros_like(table);
  return g.data_ptr<float>();
}

// out[k] += s · x[k], k < w.
void add_scaled(float* __restrict out, const float* __restrict x, float s, int64_t w) {
  if (w == 1) {  // the first-order tables: no loop set-up per term
    *out += s * *x;
    return;
  }
  for (int64_t k = 0; k < w; ++k) out[k] += s * x[k];
}

// B: the rows of a context batch (its users column).
int64_t batch_rows(const data::Batch& batch) {
  if (!batch.users.defined()) throw Error("context model: the batch has no user column");
  return batch.users.size(0);
}

}  // namespace

template <class Term>
void ContextEmbeddingImpl::for_each_term(const data::Batch& batch, Term&& term) const {
  // Table numbers as in tables(): token, float, token_seq…, float_seq….
  const int token_table = 0, float_table = token_table_ ? 1 : 0;
  const int seq_base = float_table + (float_table_ ? 1 : 0);
  const int float_seq_base = seq_base + static_cast<int>(seq_tables_.size());
  const int64_t b = batch_rows(batch);
  int64_t column = 0;
  // Pooled fields (pool()): each non-zero id's row with scale 1 (sum) or 1 / (count + 1e-8)
  // (mean), times the element's value for float_seq.
  for (size_t k = 0; k < fields_.token_seq.size(); ++k, ++column) {
    const torch::Tensor ids = feature(batch, fields_.token_seq[k].name).contiguous();
    const int64_t len = ids.size(1);
    const int64_t* id = ids.data_ptr<int64_t>();
    for (int64_t r = 0; r < b; ++r) {
      const int64_t* row = id + r * len;
      const int64_t count = std::count_if(row, row + len, [](int64_t x) { return x != 0; });
      const float scale = seq_sum_ ? 1.0f : 1.0f / (static_cast<float>(count) + 1e-8f);
      for (int64_t j = 0; j < len; ++j)
        if (row[j] != 0) term(r, column, seq_base + static_cast<int>(k), row[j], scale, 1.0f);
    }
  }
  if (token_table_) {
    const int64_t* offset = token_offsets_.data_ptr<int64_t>();
    for (size_t j = 0; j < fields_.token.size(); ++j, ++column) {
      const torch::Tensor ids = feature(batch, fields_.token[j].name).contiguous();
      const int64_t* id = ids.data_ptr<int64_t>();
      for (int64_t r = 0; r < b; ++r) term(r, column, token_table, id[r] + offset[j], 1.0f, 1.0f);
    }
  }
  for (size_t k = 0; k < fields_.float_seq.size(); ++k, ++column) {
    const torch::Tensor v = feature(batch, fields_.float_seq[k].name).contiguous();  // [B, L, 2]
    const int64_t len = v.size(1);
    const float* x = v.data_ptr<float>();
    for (int64_t r = 0; r < b; ++r) {
      const float* row = x + r * len * 2;
      int64_t count = 0;
      for (int64_t j = 0; j < len; ++j) count += static_cast<int64_t>(row[2 * j + 1]) != 0;
      const float scale = 1.0f / (static_cast<float>(count) + 1e-8f);
      for (int64_t j = 0; j < len; ++j) {
        const auto index = static_cast<int64_t>(row[2 * j + 1]);
        if (index != 0) {
          const float s = scale * row[2 * j];
          term(r, column, float_seq_base + static_cast<int>(k), index, s, s);
        }
      }
    }
  }
  if (float_table_) {
    // Discretised: the bucket id's row; otherwise every value uses row 1 of its field.
    const int64_t* offset = float_offsets_.data_ptr<int64_t>();
    for (size_t j = 0; j < fields_.float_fields.size(); ++j, ++column) {
      const torch::Tensor v = feature(batch, fields_.float_fields[j].name).contiguous();
      if (fields_.float_fields[j].discretised) {
        const int64_t* id = v.data_ptr<int64_t>();
        for (int64_t r = 0; r < b; ++r) term(r, column, float_table, offset[j] + id[r], 1.0f, 1.0f);
        continue;
      }
      const float* x = v.data_ptr<float>();
      for (int64_t r = 0; r < b; ++r) term(r, column, float_table, offset[j] + 1, x[r], x[r]);
    }
  }
}

void ContextEmbeddingImpl::forward_direct(const data::Batch& batch, float* out) const {
  std::vector<const float*> weight;
  for (const torch::Tensor& t : tables()) weight.push_back(t.data_ptr<float>());
  const int64_t f = fields_.size(), w = width_;
  std::fill(out, out + batch_rows(batch) * f * w, 0.0f);
  for_each_term(batch, [&](int64_t r, int64_t c, int t, int64_t row, float s, float) {
    add_scaled(out + (r * f + c) * w, weight[static_cast<size_t>(t)] + row * w, s, w);
  });
}

void ContextEmbeddingImpl::sum_direct(const data::Batch& batch, float* out) const {
  std::vector<const float*> weight;
  for (const torch::Tensor& t : tables()) weight.push_back(t.data_ptr<float>());
  const int64_t w = width_;
  std::fill(out, out + batch_rows(batch) * w, 0.0f);
  for_each_term(batch, [&](int64_t r, int64_t, int t, int64_t row, float s, float) {
    add_scaled(out + r * w, weight[static_cast<size_t>(t)] + row * w, s, w);
  });
}

void ContextEmbeddingImpl::add_gradient(const data::Batch& batch, const float* grad,
                                        bool shared_by_fields) {
  std::vector<float*> out;
  for (torch::Tensor t : tables()) out.push_back(table_gradient(t));
  const int64_t f = shared_by_fields ? 1 : fields_.size(), w = width_;
  for_each_term(batch, [&](int64_t r, int64_t c, int t, int64_t row, float s, float) {
    const int64_t column = shared_by_fields ? 0 : c;
    add_scaled(out[static_cast<size_t>(t)] + row * w, grad + (r * f + column) * w, s, w);
  });
}

namespace {

// Error unless a first-order part's tables (`first`, width 1) can pair with `ours`: as many
// tables, with as many rows each.
void check_first_order(const std::vector<torch::Tensor>& ours,
                       const std::vector<torch::Tensor>& first, int64_t first_width) {
  bool same = first_width == 1 && ours.size() == first.size();
  for (size_t t = 0; same && t < ours.size(); ++t) same = ours[t].size(0) == first[t].size(0);
  if (!same)
    throw Error("context embedding: paired with a first-order part of other fields or width");
}

}  // namespace

void ContextEmbeddingImpl::forward_direct_with(const ContextEmbeddingImpl& first,
                                               const data::Batch& batch, float* out,
                                               float* first_out) const {
  const std::vector<torch::Tensor> ours = tables(), theirs = first.tables();
  check_first_order(ours, theirs, first.width_);
  std::vector<const float*> weight, first_weight;
  for (const torch::Tensor& t : ours) weight.push_back(t.data_ptr<float>());
  for (const torch::Tensor& t : theirs) first_weight.push_back(t.data_ptr<float>());
  const int64_t b = batch_rows(batch), f = fields_.size(), w = width_;
  const bool first_sum = first.seq_sum_;
  std::fill(out, out + b * f * w, 0.0f);
  std::fill(first_out, first_out + b, 0.0f);
  for_each_term(batch, [&](int64_t r, int64_t c, int t, int64_t row, float s, float s_sum) {
    const auto table = static_cast<size_t>(t);
    add_scaled(out + (r * f + c) * w, weight[table] + row * w, s, w);
    first_out[r] += (first_sum ? s_sum : s) * first_weight[table][row];
  });
}

void ContextEmbeddingImpl::add_gradient_with(ContextEmbeddingImpl& first, const data::Batch& batch,
                                             const float* grad, const float* first_grad) {
  std::vector<torch::Tensor> ours = tables(), theirs = first.tables();
  check_first_order(ours, theirs, first.width_);
  std::vector<float*> out, first_out;
  for (torch::Tensor& t : ours) out.push_back(table_gradient(t));
  for (torch::Tensor& t : theirs) first_out.push_back(table_gradient(t));
  const int64_t f = fields_.size(), w = width_;
  const bool first_sum = first.seq_sum_;
  for_each_term(batch, [&](int64_t r, int64_t c, int t, int64_t row, float s, float s_sum) {
    const auto table = static_cast<size_t>(t);
    add_scaled(out[table] + row * w, grad + (r * f + c) * w, s, w);
    first_out[table][row] += (first_sum ? s_sum : s) * first_grad[r];
  });
}

FirstOrderLinearImpl::FirstOrderLinearImpl(const ContextFields& fields) {
  embedding_ = register_module("embedding", ContextEmbedding(fields, 1, /*seq_sum=*/true));
  bias_ = register_parameter("bias", torch::zeros({1}));
}

torch::Tensor FirstOrderLinearImpl::forward(const data::Batch& batch) {
  return embedding_->forward(batch).sum(1) + bias_;
}

void FirstOrderLinearImpl::forward_direct(const data::Batch& batch, float* out,
                                          const ContextEmbeddingImpl* paired,
                                          float* paired_out) const {
  if (paired != nullptr)
    paired->forward_direct_with(*embedding_, batch, paired_out, out);
  else
    embedding_->sum_direct(batch, out);
  const float bias = bias_.data_ptr<float>()[0];
  const int64_t b = batch_rows(batch);
  for (int64_t r = 0; r < b; ++r) out[r] += bias;
}

void FirstOrderLinearImpl::add_gradient(const data::Batch& batch, const float* grad,
                                        ContextEmbeddingImpl* paired, const float* paired_grad) {
  const int64_t b = batch_rows(batch);
  *table_gradient(bias_) += std::accumulate(grad, grad + b, 0.0f);
  if (paired != nullptr)
    paired->add_gradient_with(*embedding_, batch, paired_grad, grad);
  else
    embedding_->add_gradient(batch, grad, /*shared_by_fields=*/true);
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
    if (dropout_ > 0) x = layers::dropout(x, dropout_, is_training());
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
