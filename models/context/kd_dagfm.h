#pragma once
// KDDAGFM (RecBole's KD_DAGFM, registered under that name): a DAG factorisation machine (the
// student) distilled from a teacher (CrossNet or CIN), in three runs chosen by `phase`:
//   teacher_training: the teacher alone, BCE on its probability;
//   distillation:     every parameter loaded from `warm_up` (the teacher run's checkpoint); the
//                     student reads a detached E and learns alpha · BCE + beta · mean((teacher
//                     logit − student logit)²), the teacher logit detached;
//   finetuning:       loaded from `warm_up` (the distillation run's checkpoint); the student on
//                     the live E, BCE.
// Outputs are probabilities (σ of the logit). Networks over E [B, F, d]:
//   CrossNet teacher: x_{l+1} = x0 ⊙ (W_l x_l + b_l) + x_l on x0 = flatten(E), t_depth layers
//     (W N(0, 1), b 0), logit = Linear(x_L).
//   CIN teacher: widths [F] + t_cin; layer k mixes the products h_{k−1}[a] ⊙ E[f] (a-major) by a
//     width-1 convolution with bias, no activation, every unit kept; Σ_d of every layer,
//     concatenated, · w (N(0, 0.01²), no bias).
//   DAGFM student: h0 = C·E (C [F, F], identity at the start); for t = 1..depth with
//     P_t, Q_t [F, F, d] masked to j ≥ i: inner: agg_s = Σ_f h_{t−1,f} ⊙ P_t[f, s];
//     outer: agg_s = Σ_f (Σ_d h_{t−1,f} P_t[f, s]) · Q_t[f, s]; h_t = h0 ⊙ agg. logit =
//     Linear([Σ_d h_0, …, Σ_d h_depth]) ([B, F·(depth + 1)]).
// Both networks are built in every phase (their parameters travel in each checkpoint).
#include <string>
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class KDDAGFM : public ContextModel {
 public:
  enum class Phase { kTeacher, kDistillation, kFinetuning };
  explicit KDDAGFM(const ModelContext& ctx);
  // The probability of the phase's network: the teacher's while training it, else the student's.
  torch::Tensor logits(const data::Batch& batch) override;
  bool probability_output() const override { return true; }
  // Distillation: α · BCE(σ(student), y) + β · mean (teacher − student)², both means over the
  // rows (the teacher frozen); the other phases: ContextModel's.
  torch::Tensor row_loss(const data::Batch& batch) override;
  // The networks' logits (before σ) over E [B, F, d] → [B].
  torch::Tensor teacher_logit(const torch::Tensor& e);
  torch::Tensor student_logit(const torch::Tensor& e);

 private:
  Phase phase_;
  bool cin_teacher_, outer_;
  double alpha_, beta_;
  // CrossNet teacher.
  std::vector<torch::Tensor> cross_w_, cross_b_;  // [D, D], [D]
  torch::nn::Linear cross_out_{nullptr};
  // CIN teacher.
  std::vector<torch::Tensor> cin_w_, cin_b_;  // [H_k, H_{k−1}·F], [H_k]
  torch::Tensor cin_out_;                     // [Σ H_k]
  // DAGFM student.
  torch::Tensor mix_;                 // C [F, F]
  torch::Tensor mask_;                // [F, F, 1] buffer: 1 where j ≥ i
  std::vector<torch::Tensor> p_, q_;  // [F, F, d] each (q_ for the outer type)
  torch::nn::Linear student_out_{nullptr};
};

}  // namespace recbole::models
