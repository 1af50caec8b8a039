#include "models/general/nais.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "models/layers/history.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/pretrained.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/data/batch.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models {
namespace {

// Floats of one [n, |R_u|, max(d, weight_size)] intermediate of a full-sort block: 1 MiB, so
// that a block's few intermediates stay near each core's L2 (an ml-100k evaluation took ~26 %
// less time than with 4 MiB blocks; 512 KiB blocks were no faster).
constexpr int64_t kNAISBlockFloats = int64_t{1} << 18;

}  // namespace

NAIS::NAIS(const ModelContext& ctx)
    : Model("NAIS", ctx),
      concat_(ctx.config.get_string("algorithm") == "concat"),
      beta_(ctx.config.get_double("beta")),
      dim_(keys::embedding_size().get(ctx.config)),
      weight_size_(ctx.config.get_int("weight_size")) {
  const std::vector<double> reg =
      layers::weight_list(ctx.config, "NAIS", "reg_weights", {"p", "q", "attention MLP"});
  reg_p_ = reg[0];
  reg_q_ = reg[1];
  reg_w_ = reg[2];
  scale_ = ctx.device.place(
      layers::history_length_scale(ctx.train, ctx.n_users, ctx.config.get_double("alpha")));
  item_src_embedding_ =
      register_table("item_src_embedding", ctx.n_items, dim_, layers::Init::kNormal001);
  item_dst_embedding_ =
      register_table("item_dst_embedding", ctx.n_items, dim_, layers::Init::kNormal001);
  bias_ = register_parameter("bias", torch::zeros({ctx.n_items}));
  mlp_ = register_module(
      "mlp_layers",
      layers::MLP(std::vector<int64_t>{concat_ ? 2 * dim_ : dim_, weight_size_}, 0.0, "relu"));
  layers::initialize(*mlp_, layers::Init::kXavierNormal);
  weight_layer_ = register_parameter("weight_layer", torch::ones({weight_size_, 1}));
  if (!ctx.config.is_null("pretrain_path") && !ctx.config.get_string("pretrain_path").empty()) {
    // The attention keeps its fresh initialisation, as RecBole's re-initialised MLP.
    layers::load_pretrained_tables(
        ctx.config, "pretrain_path", "NAIS", "FISM",
        {{"item_src_embedding", item_src_embedding_}, {"item_dst_embedding", item_dst_embedding_}});
  }
  to(ctx.device.device());
}

torch::Tensor NAIS::attention(const torch::Tensor& p, const torch::Tensor& q,
                              const torch::Tensor& pq) {
  torch::Tensor hidden;
  if (concat_) {
    // W[p ; q] + c = W_p p + (W_q q + c): the halves broadcast against each other.
    const torch::nn::Linear& layer = mlp_->linears()[0];
    std::vector<int64_t> q_shape = q.sizes().vec();
    q_shape.back() = weight_size_;
    const torch::Tensor from_q =
        torch::addmm(layer->bias, q.reshape({-1, dim_}), layer->weight.narrow(1, dim_, dim_).t());
    hidden =
        torch::relu(torch::matmul(p, layer->weight.narrow(1, 0, dim_).t()) + from_q.view(q_shape));
  } else {
    hidden = mlp_->forward(pq);
  }
  return torch::matmul(hidden, weight_layer_).squeeze(-1);
}

torch::Tensor NAIS::logits(const torch::Tensor& users, const torch::Tensor& items) {
  // The rows' histories flattened: history item j of row b is the pair (seg = b, j).
  const torch::Tensor u_host = DeviceManager::to_host(users).contiguous();
  const int64_t rows = u_host.size(0);
  const int64_t* u = u_host.data_ptr<int64_t>();
  std::vector<int64_t> hist, seg, ends;
  for (int64_t b = 0; b < rows; ++b) {
    const auto row = static_cast<int32_t>(u[b]);
    hist.insert(hist.end(), train_.row_begin(row), train_.row_end(row));
    seg.resize(hist.size(), b);
    ends.push_back(static_cast<int64_t>(hist.size()));
  }
  const DeviceManager& device = device_manager();
  const torch::Tensor seg_t = device.place(data::id_tensor(seg));
  const torch::Tensor p = item_src_embedding_.index_select(0, device.place(data::id_tensor(hist)));
  const torch::Tensor q = item_dst_embedding_.index_select(0, items).index_select(0, seg_t);
  // p ⊙ q once: the similarity's terms and 'prod''s attention input (its [P, d] buffers, forward
  // and back, are a large part of a batch's memory traffic).
  const torch::Tensor pq = p * q;
  const torch::Tensor l = attention(p, q, pq);  // [P]
  const torch::Tensor sim = pq.sum(1);          // [P]
  // Per row: m = max l (a constant: the identity holds for any m), s = Σ exp(l − m),
  // w = Σ exp(l − m) sim, y = w · exp(m(1 − β)) / s^β. An empty row has s = w = 0: y = b_i.
  // The rows' maxima on the host (each row's pairs are contiguous): a pass over P floats.
  const torch::Tensor l_host = DeviceManager::to_host(l.detach()).contiguous();
  const float* lp = l_host.data_ptr<float>();
  std::vector<float> maxima(static_cast<size_t>(rows), 0.0f);
  int64_t k = 0;
  for (int64_t b = 0; b < rows; ++b) {
    if (k == ends[static_cast<size_t>(b)]) continue;  // an empty row keeps 0
    float mb = lp[k];
    for (; k < ends[static_cast<size_t>(b)]; ++k) mb = std::max(mb, lp[k]);
    maxima[static_cast<size_t>(b)] = mb;
  }
  const torch::Tensor m = device.place(torch::tensor(maxima));
  const torch::Tensor zeros = torch::zeros({rows}, l.options());
  const torch::Tensor e = torch::exp(l - m.index_select(0, seg_t));
  const torch::Tensor s = zeros.index_add(0, seg_t, e);
  const torch::Tensor w = zeros.index_add(0, seg_t, e * sim);
  const torch::Tensor factor = torch::exp(m * (1.0 - beta_) - beta_ * torch::log(s.clamp_min(1.0)));
  return scale_.index_select(0, users) * w * factor + bias_.index_select(0, items);
}

torch::Tensor NAIS::calculate_loss(const data::Batch& batch) {
  torch::Tensor reg_w = torch::zeros({}, item_src_embedding_.options());
  for (const torch::nn::Linear& layer : mlp_->linears()) reg_w = reg_w + layer->weight.norm();
  return torch::binary_cross_entropy_with_logits(logits(batch.users, batch.items), batch.labels) +
         reg_p_ * item_src_embedding_.norm() + reg_q_ * item_dst_embedding_.norm() + reg_w_ * reg_w;
}

torch::Tensor NAIS::predict(const data::Batch& batch) {
  return torch::sigmoid(logits(batch.users, batch.items));
}

torch::Tensor NAIS::score_block(int64_t u, const torch::Tensor& hist, int64_t i0, int64_t n) {
  const torch::Tensor q = item_dst_embedding_.narrow(0, i0, n);  // [n, d]
  const torch::Tensor bias = bias_.narrow(0, i0, n);             // [n]
  if (hist.size(0) == 0) return torch::sigmoid(bias);
  const torch::Tensor p = item_src_embedding_.index_select(0, hist);  // [L, d]
  const torch::Tensor pu = p.unsqueeze(0), qu = q.unsqueeze(1);
  const torch::Tensor l = attention(pu, qu, concat_ ? torch::Tensor() : pu * qu);  // [n, L]
  const torch::Tensor sim = torch::matmul(q, p.t());                               // [n, L]
  const torch::Tensor m = std::get<0>(l.max(1, /*keepdim=*/true));                 // [n, 1]
  const torch::Tensor e = torch::exp(l - m);
  const torch::Tensor s = e.sum(1);
  const torch::Tensor w = (e * sim).sum(1);
  const torch::Tensor factor = torch::exp(m.squeeze(1) * (1.0 - beta_) - beta_ * torch::log(s));
  return torch::sigmoid(scale_[u] * w * factor + bias);
}

torch::Tensor NAIS::full_sort_predict(const data::Batch& batch) {
  torch::NoGradGuard no_grad;
  const DeviceManager& device = device_manager();
  const torch::Tensor u_host = DeviceManager::to_host(batch.users).contiguous();
  const int64_t rows = u_host.size(0);
  const int64_t* users = u_host.data_ptr<int64_t>();
  torch::Tensor out = torch::empty({rows, n_items()}, item_src_embedding_.options());
  // Tasks: (user, block of items); each writes its own slice of `out`, so the result does not
  // depend on the thread count, nor on the other users of the batch.
  struct Task {
    int64_t row, i0, n;
  };
  std::vector<Task> tasks;
  std::vector<torch::Tensor> hists(static_cast<size_t>(rows));
  for (int64_t b = 0; b < rows; ++b) {
    const auto u = static_cast<int32_t>(users[b]);
    std::vector<int64_t> h(train_.row_begin(u), train_.row_end(u));
    hists[static_cast<size_t>(b)] = device.place(data::id_tensor(h));
    const int64_t per_item =
        std::max<int64_t>(1, static_cast<int64_t>(h.size()) * std::max(dim_, weight_size_));
    const int64_t block = std::max<int64_t>(1, kNAISBlockFloats / per_item);
    for (int64_t i0 = 0; i0 < n_items(); i0 += block)
      tasks.push_back({b, i0, std::min(block, n_items() - i0)});
  }
  auto run = [&](int64_t t, int) {
    torch::NoGradGuard task_no_grad;  // grad mode is per thread
    const Task& k = tasks[static_cast<size_t>(t)];
    out[k.row]
        .narrow(0, k.i0, k.n)
        .copy_(score_block(users[k.row], hists[static_cast<size_t>(k.row)], k.i0, k.n));
  };
  const auto n_tasks = static_cast<int64_t>(tasks.size());
  if (out.is_cuda()) {
    for (int64_t t = 0; t < n_tasks; ++t) run(t, 0);
    return out;
  }
  BlasThreadsScope one_blas_thread(1);  // each worker runs its own small GEMMs
  parallel_for(n_tasks, run);
  return out;
}

RECBOLE_REGISTER_MODEL(NAIS) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"NAIS",
       "general",
       InputType::kPointwise,
       "Neural attentive item similarity: FISM with an attention over the user's history",
       {Key("algorithm", KeyType::kString)
            .choices({"prod", "concat"})
            .help("Attention input: p_j ⊙ q_i (prod) or [p_j ; q_i] (concat)"),
        keys::embedding_size().decl("Dimension of the item embeddings"),
        Key("weight_size", KeyType::kInt).min(1).help("Hidden size of the attention MLP"),
        Key("split_to", KeyType::kInt)
            .min(0)
            .help("RecBole's item chunks for its per-user full sort; no effect (the full sort "
                  "works on bounded blocks of items)"),
        Key("reg_weights", KeyType::kFloatList)
            .min(0)
            .help("Weights of ‖p‖, ‖q‖ and the attention MLP's ‖W‖ (three)"),
        Key("alpha", KeyType::kFloat)
            .min(0)
            .help("Exponent of the history-length normalisation |R_u|^-alpha"),
        Key("beta", KeyType::kFloat)
            .min(0)
            .help("Smoothing exponent of the attention's softmax denominator"),
        Key("pretrain_path", KeyType::kString)
            .null()
            .help("A FISM checkpoint whose item tables initialise p and q (none: random)")},
       [](const ModelContext& ctx) { return std::make_shared<NAIS>(ctx); }});
}

}  // namespace recbole::models
