#pragma once
// DirectMLP: a deep part's forward and backward written out, without autograd — a ContextMLP
// with ReLU and no BatchNorm (Dropout → Linear → ReLU per layer) followed by a Linear to one
// logit, as DeepFM's. For ContextModel's closed-form step, which runs it on each part of a
// batch on the CPU pool.
//
// Why: DeepFM's autograd step is some hundred libtorch ops a part; in perf, dispatch, element-wise
// passes, allocation and copies took about three quarters of the epoch and the products a quarter
// (their kernels on libxsmm). Here a layer is one product and one pass (bias and ReLU, or the
// ReLU's and the mask's gradient), over buffers kept between batches: the arithmetic is
// kernels/mlp.h's; this class keeps the parameters, the buffers and the masks.
//
// The dropout masks are layers::fill_dropout_mask's, drawn on the calling thread's key in layer
// order, so under the same DropoutKeyScope they are the masks that ContextMLP::forward draws; the
// step equals autograd's up to float rounding (tested).
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "models/layers/context_embedding.h"

namespace recbole::models::layers {

class DirectMLP {
 public:
  // One part's activations and parameter gradients, reused between batches (float32, CPU).
  struct Work {
    int64_t rows = 0;
    std::vector<torch::Tensor> in;       // [n, in_k]: layer k's input after dropout (no layer:
                                         // the output layer's input); a view of x or of
                                         // `dropped` or `out`, valid until the next forward
    std::vector<torch::Tensor> dropped;  // [n, in_k]: the input times the mask (training)
    std::vector<torch::Tensor> masks;    // [n, in_k]: the dropout masks
    bool dropout = false;                // whether the last forward applied the masks
    std::vector<torch::Tensor> out;      // [n, out_k]: layer k's output after ReLU
    std::vector<torch::Tensor> delta;    // [n, out_k]: dloss/d(layer k's pre-activation)
    torch::Tensor dx;                    // [n, in_0]: dloss/dx
    std::vector<torch::Tensor> grads;    // the parameters' gradients, in parameters() order
  };

  // mlp: activation relu, no BatchNorm (supports()); output: Linear(mlp's last width, 1), with a
  // bias. Both stay owned by the model; their parameters are read at every call.
  DirectMLP(ContextMLP mlp, torch::nn::Linear output);
  static bool supports(const ContextMLPImpl& mlp);

  // The weights and biases, layer by layer, then the output's: the order of Work::grads.
  std::vector<torch::Tensor> parameters() const;
  // Before a batch's parts run (on one thread): the weights as the products read them.
  void prepare();
  // x: [n, in_0] float32 contiguous rows (not kept past backward). Adds the deep logit of each
  // row to z[0..n). training: dropout (masks drawn on this thread's key) and the activations
  // kept for backward.
  void forward(const torch::Tensor& x, bool training, float* z, Work& w) const;
  // dz: dloss/dlogit per row of the last forward(w). Fills w.dx and w.grads.
  void backward(const float* dz, Work& w) const;
  // Adds a part's w.grads to the parameters' gradients (zeros when undefined); called for the
  // parts in order, the order successive backward() calls would have accumulated them.
  void add_gradients(const Work& part) const;

 private:
  ContextMLP mlp_;
  torch::nn::Linear output_;
  std::vector<torch::Tensor> transposed_;  // [in_k, out_k]: each weight transposed (prepare())
};

}  // namespace recbole::models::layers
