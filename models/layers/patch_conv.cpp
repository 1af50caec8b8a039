#include "models/layers/patch_conv.h"

#include "recbole/utils/error.h"

namespace recbole::models::layers {

torch::Tensor patch_conv2d(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias) {
  if (x.dim() != 4 || weight.dim() != 4 || x.size(3) != weight.size(1) || bias.dim() != 1 ||
      bias.size(0) != weight.size(0) || x.size(1) < weight.size(2) || x.size(2) < weight.size(3))
    throw Error(
        "patch_conv2d: expected x [N, H, W, C], weight [C_out, C, kh, kw] with kh ≤ H "
        "and kw ≤ W, and bias [C_out]");
  const int64_t n = x.size(0), c = x.size(3), c_out = weight.size(0);
  const int64_t kh = weight.size(2), kw = weight.size(3);
  const int64_t h = x.size(1) / kh, w = x.size(2) / kw;
  // [N, h, kh, w, kw, C] → [N, h, w, kh, kw, C]: one row of kh·kw·C per patch, in the order of
  // the weight permuted to [C_out, kh, kw, C].
  const torch::Tensor patches = x.narrow(1, 0, h * kh)
                                    .narrow(2, 0, w * kw)
                                    .reshape({n, h, kh, w, kw, c})
                                    .permute({0, 1, 3, 2, 4, 5})
                                    .reshape({n * h * w, kh * kw * c});
  const torch::Tensor filters = weight.permute({0, 2, 3, 1}).reshape({c_out, kh * kw * c});
  return torch::addmm(bias, patches, filters.t()).view({n, h, w, c_out});
}

}  // namespace recbole::models::layers
