#include "models/context/kd_dagfm.h"

#include <cmath>

#include "models/layers/pretrained.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {
namespace {

KDDAGFM::Phase kd_dagfm_phase(const std::string& phase) {
  if (phase == "teacher_training") return KDDAGFM::Phase::kTeacher;
  if (phase == "distillation") return KDDAGFM::Phase::kDistillation;
  return KDDAGFM::Phase::kFinetuning;  // the key's choices allow nothing else
}

}  // namespace

KDDAGFM::KDDAGFM(const ModelContext& ctx)
    : ContextModel("KD_DAGFM", ctx),
      phase_(kd_dagfm_phase(ctx.config.get_string("phase"))),
      cin_teacher_(ctx.config.get_string("teacher") == "CIN"),
      outer_(ctx.config.get_string("type") == "outer"),
      alpha_(ctx.config.get_double("alpha")),
      beta_(ctx.config.get_double("beta")) {
  const int64_t f = num_fields_, d = embedding_size_, flat = f * d;
  torch::NoGradGuard no_grad;
  // The teacher.
  if (cin_teacher_) {
    int64_t hidden = f, total = 0;
    for (int64_t width : ctx.config.get_int_list("t_cin")) {
      const std::string k = std::to_string(cin_w_.size());
      const double bound = 1.0 / std::sqrt(static_cast<double>(hidden * f));  // Conv1d default
      cin_w_.push_back(register_parameter(
          "cin_w" + k, torch::empty({width, hidden * f}).uniform_(-bound, bound)));
      cin_b_.push_back(
          register_parameter("cin_b" + k, torch::empty({width}).uniform_(-bound, bound)));
      hidden = width;
      total += width;
    }
    cin_out_ = register_parameter("cin_out", torch::empty({total}).normal_(0.0, 0.01));
  } else {
    for (int64_t l = 0; l < ctx.config.get_int("t_depth"); ++l) {
      cross_w_.push_back(
          register_parameter("cross_w" + std::to_string(l), torch::randn({flat, flat})));
      cross_b_.push_back(register_parameter("cross_b" + std::to_string(l), torch::zeros({flat})));
    }
    cross_out_ = register_module("cross_out", torch::nn::Linear(flat, 1));
  }
  // The student.
  mix_ = register_parameter("mix", torch::eye(f));
  mask_ = register_buffer("mask", torch::ones({f, f}).triu().unsqueeze(2));  // j ≥ i
  const int64_t depth = ctx.config.get_int("depth");
  auto pair_table = [&] {
    torch::Tensor t = torch::empty({f, f, d});
    torch::nn::init::xavier_normal_(t, 1.414);
    return t;
  };
  for (int64_t t = 0; t < depth; ++t) {
    p_.push_back(register_parameter("p" + std::to_string(t), pair_table()));
    if (outer_) q_.push_back(register_parameter("q" + std::to_string(t), pair_table()));
  }
  student_out_ = register_module("student_out", torch::nn::Linear(f * (depth + 1), 1));
  finish();
  if (phase_ != Phase::kTeacher) {
    if (ctx.config.get_string("warm_up").empty())
      throw ConfigError(ctx.config.source("warm_up") + ": KD_DAGFM: phase " +
                        ctx.config.get_string("phase") +
                        " needs warm_up: the checkpoint of the previous phase's run (teacher_"
                        "training before distillation, distillation before finetuning)");
    std::vector<std::pair<std::string, torch::Tensor>> tables;
    for (const auto& p : named_parameters()) tables.emplace_back(p.key(), p.value());
    layers::load_pretrained_tables(ctx.config, "warm_up", "KD_DAGFM", "KD_DAGFM", tables);
  }
}

torch::Tensor KDDAGFM::teacher_logit(const torch::Tensor& e) {
  const int64_t b = e.size(0), d = e.size(2);
  if (!cin_teacher_) {
    const torch::Tensor x0 = e.flatten(1);
    torch::Tensor x = x0;
    for (size_t l = 0; l < cross_w_.size(); ++l)
      x = x0 * (x.matmul(cross_w_[l].t()) + cross_b_[l]) + x;
    return cross_out_->forward(x).squeeze(1);
  }
  // Layout [B, d, channels]: each width-1 convolution is one [B·d, H·F] × [H·F, H_k] product.
  const torch::Tensor et = e.transpose(1, 2);  // [B, d, F]
  torch::Tensor x = et;
  std::vector<torch::Tensor> sums;
  for (size_t k = 0; k < cin_w_.size(); ++k) {
    const torch::Tensor z = (x.unsqueeze(3) * et.unsqueeze(2)).reshape({b * d, -1});  // a-major
    x = torch::addmm(cin_b_[k], z, cin_w_[k].t()).view({b, d, -1});
    sums.push_back(x.sum(1));  // [B, H_k]
  }
  return torch::cat(sums, 1).matmul(cin_out_);
}

torch::Tensor KDDAGFM::student_logit(const torch::Tensor& e) {
  const torch::Tensor h0 = torch::matmul(mix_, e);  // [B, F, d]: h0_i = Σ_j C_ij E_j
  std::vector<torch::Tensor> states{h0.sum(2)};
  torch::Tensor h = h0;
  for (size_t t = 0; t < p_.size(); ++t) {
    const torch::Tensor p = p_[t] * mask_;  // [F(f), F(s), d]
    torch::Tensor agg;
    if (outer_) {
      const torch::Tensor tau = torch::einsum("bfd,fsd->bfs", {h, p});  // [B, F, F]
      agg = torch::einsum("bfs,fsd->bsd", {tau, q_[t]});
    } else {
      agg = torch::einsum("bfd,fsd->bsd", {h, p});
    }
    h = h0 * agg;
    states.push_back(h.sum(2));
  }
  return student_out_->forward(torch::cat(states, 1)).squeeze(1);
}

torch::Tensor KDDAGFM::logits(const data::Batch& batch) {
  const torch::Tensor e = embed(batch);
  if (phase_ == Phase::kTeacher) return torch::sigmoid(teacher_logit(e));
  return torch::sigmoid(student_logit(phase_ == Phase::kDistillation ? e.detach() : e));
}

torch::Tensor KDDAGFM::row_loss(const data::Batch& batch) {
  if (phase_ != Phase::kDistillation) return ContextModel::row_loss(batch);
  const torch::Tensor e = embed(batch).detach();
  const torch::Tensor student = student_logit(e);
  torch::Tensor teacher;
  {
    torch::NoGradGuard no_grad;
    teacher = teacher_logit(e);
  }
  return alpha_ * torch::binary_cross_entropy(torch::sigmoid(student), batch.labels) +
         beta_ * (teacher - student).pow(2).mean();
}

RECBOLE_REGISTER_MODEL(KD_DAGFM) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"KD_DAGFM",
       "context",
       InputType::kPointwise,
       "a DAG factorisation machine distilled from a CrossNet or CIN teacher, in three runs "
       "(teacher_training, distillation, finetuning)",
       {keys::embedding_size().decl("Width of the field embeddings"),
        Key("teacher", KeyType::kString).choices({"CrossNet", "CIN"}).help("The teacher network"),
        Key("phase", KeyType::kString)
            .choices({"teacher_training", "distillation", "finetuning"})
            .help("Which run of the three this is"),
        Key("type", KeyType::kString)
            .choices({"inner", "outer"})
            .help("The student's interaction: inner (P only) or outer (P and Q)"),
        Key("t_depth", KeyType::kInt).min(0).help("Cross layers of the CrossNet teacher"),
        Key("depth", KeyType::kInt).min(0).help("Interaction layers of the student"),
        Key("alpha", KeyType::kFloat).min(0).help("Weight of the student's BCE in distillation"),
        Key("beta", KeyType::kFloat)
            .min(0)
            .help("Weight of the squared logit gap to the teacher in distillation"),
        Key("warm_up", KeyType::kString)
            .help("Checkpoint of the previous phase's run (distillation, finetuning)"),
        Key("t_cin", KeyType::kIntList).min(1).help("Layer widths of the CIN teacher")},
       [](const ModelContext& ctx) { return std::make_shared<KDDAGFM>(ctx); }});
}

}  // namespace recbole::models
