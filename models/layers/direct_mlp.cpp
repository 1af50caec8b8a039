#include "models/layers/direct_mlp.h"

#include <utility>

#include "kernels/mlp.h"
#include "models/layers/dropout.h"
#include "recbole/utils/error.h"

namespace recbole::models::layers {

namespace {

// t as a [rows, cols] float32 CPU buffer, reallocated only when its shape changes.
void ensure_shape(torch::Tensor& t, int64_t rows, int64_t cols) {
  if (!t.defined() || t.size(0) != rows || t.size(1) != cols)
    t = torch::empty({rows, cols}, torch::kFloat32);
}

float* direct_floats(const torch::Tensor& t) { return t.data_ptr<float>(); }

// A layer's weight [out, in] as the kernels read it: rows in place (a parameter is contiguous).
torch::Tensor weight_rows(const torch::nn::Linear& l) { return l->weight.detach().contiguous(); }

}  // namespace

DirectMLP::DirectMLP(ContextMLP mlp, torch::nn::Linear output)
    : mlp_(std::move(mlp)), output_(std::move(output)) {
  if (!supports(*mlp_)) throw Error("DirectMLP: the MLP must use relu and no BatchNorm");
  if (output_->weight.size(0) != 1 || !output_->bias.defined())
    throw Error("DirectMLP: the output layer must be a Linear to one logit, with a bias");
}

bool DirectMLP::supports(const ContextMLPImpl& mlp) {
  return mlp.activation() == "relu" && !mlp.batch_norm();
}

std::vector<torch::Tensor> DirectMLP::parameters() const {
  std::vector<torch::Tensor> out;
  for (const torch::nn::Linear& l : mlp_->linears()) {
    out.push_back(l->weight);
    out.push_back(l->bias);
  }
  out.push_back(output_->weight);
  out.push_back(output_->bias);
  return out;
}

void DirectMLP::prepare() {
  torch::NoGradGuard no_grad;
  transposed_.clear();
  for (const torch::nn::Linear& l : mlp_->linears())
    transposed_.push_back(l->weight.detach().t().contiguous());
}

void DirectMLP::forward(const torch::Tensor& x, bool training, float* z, Work& w) const {
  const auto& linears = mlp_->linears();
  const size_t layers = linears.size();
  if (transposed_.size() != layers) throw Error("DirectMLP: forward before prepare()");
  const int64_t n = x.size(0);
  w.rows = n;
  for (auto* v : {&w.in, &w.dropped, &w.masks, &w.out, &w.delta}) v->resize(layers);
  w.dropout = training && mlp_->dropout() > 0.0;
  torch::Tensor a = x.contiguous();
  for (size_t k = 0; k < layers; ++k) {
    const int64_t width_in = a.size(1), width_out = transposed_[k].size(1);
    w.in[k] = a;
    const float* mask = nullptr;
    if (w.dropout) {
      // The mask ContextMLP::forward's layers::dropout draws here (outside training or at
      // p = 0 it draws none, and no key).
      ensure_shape(w.masks[k], n, width_in);
      ensure_shape(w.dropped[k], n, width_in);
      fill_dropout_mask(direct_floats(w.masks[k]), n * width_in, mlp_->dropout(), training);
      mask = direct_floats(w.masks[k]);
      w.in[k] = w.dropped[k];
    }
    ensure_shape(w.out[k], n, width_out);
    kernels::mlp_layer_forward(direct_floats(a), mask,
                               w.dropout ? direct_floats(w.dropped[k]) : nullptr,
                               direct_floats(transposed_[k]), direct_floats(linears[k]->bias), n,
                               width_in, width_out, direct_floats(w.out[k]));
    a = w.out[k];
  }
  // The output layer: one dot product per row.
  kernels::mlp_logit_forward(direct_floats(a), direct_floats(output_->weight),
                             direct_floats(output_->bias)[0], n, a.size(1), z);
  if (layers == 0) w.in.assign(1, a);  // the output layer's input, for backward
}

void DirectMLP::backward(const float* dz, Work& w) const {
  torch::NoGradGuard no_grad;
  const auto& linears = mlp_->linears();
  const size_t layers = linears.size();
  const int64_t n = w.rows;
  const std::vector<torch::Tensor> params = parameters();
  w.grads.resize(params.size());
  for (size_t k = 0; k < params.size(); ++k)
    ensure_shape(w.grads[k], params[k].size(0), params[k].dim() > 1 ? params[k].size(1) : 1);
  const torch::Tensor& top = layers > 0 ? w.out[layers - 1] : w.in[0];
  const int64_t width = top.size(1);

  // The output layer, and dloss/d(top) times ReLU's gradient for the last hidden layer.
  torch::Tensor& first = layers > 0 ? w.delta[layers - 1] : w.dx;
  ensure_shape(first, n, width);
  kernels::mlp_logit_backward(dz, direct_floats(top), direct_floats(output_->weight), n, width,
                              layers > 0, direct_floats(w.grads[2 * layers]),
                              direct_floats(w.grads[2 * layers + 1]), direct_floats(first));
  for (size_t k = layers; k-- > 0;) {
    const torch::Tensor& delta = w.delta[k];  // [n, out_k]
    const int64_t width_in = w.in[k].size(1), width_out = delta.size(1);
    // Into layer k's input: dloss/d(the pre-activation below), or dloss/dx below the first.
    torch::Tensor& below = k > 0 ? w.delta[k - 1] : w.dx;
    ensure_shape(below, n, width_in);
    kernels::mlp_layer_backward(
        direct_floats(delta), direct_floats(w.in[k]), direct_floats(weight_rows(linears[k])),
        w.dropout ? direct_floats(w.masks[k]) : nullptr,
        k > 0 ? direct_floats(w.out[k - 1]) : nullptr, n, width_in, width_out,
        direct_floats(w.grads[2 * k]), direct_floats(w.grads[2 * k + 1]), direct_floats(below));
  }
}

void DirectMLP::add_gradients(const Work& part) const {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> params = parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    torch::Tensor& g = params[k].mutable_grad();
    if (!g.defined()) g = torch::zeros_like(params[k]);
    g.add_(part.grads[k].view(params[k].sizes()));
  }
}

}  // namespace recbole::models::layers
