// The fused Adam optimizer against libtorch's Adam: the same updates (to float rounding) for
// parameters large enough to be split over the ThreadPool and small ones, with and without
// weight decay, parameters without a gradient left alone, the tensor path (amsgrad), and the
// state exchangeable with torch::optim::Adam's through a checkpoint.
#include <catch2/catch.hpp>

#include <sstream>

#include <torch/torch.h>

#include "trainer/fused_adam.h"

namespace {

std::vector<torch::Tensor> params_like(const std::vector<torch::Tensor>& src) {
  std::vector<torch::Tensor> out;
  for (const auto& t : src) out.push_back(t.detach().clone().requires_grad_(true));
  return out;
}

// One step of both optimizers on the same gradients (parameter k gets none when skip == k).
void step_both(torch::optim::Optimizer& a, std::vector<torch::Tensor>& pa,
               torch::optim::Optimizer& b, std::vector<torch::Tensor>& pb, int seed, size_t skip) {
  torch::manual_seed(seed);
  a.zero_grad();
  b.zero_grad();
  for (size_t k = 0; k < pa.size(); ++k) {
    if (k == skip) continue;
    const torch::Tensor g = torch::randn(pa[k].sizes());
    pa[k].mutable_grad() = g.clone();
    pb[k].mutable_grad() = g.clone();
  }
  a.step();
  b.step();
}

void check_close(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  for (size_t k = 0; k < a.size(); ++k) CHECK(torch::allclose(a[k], b[k], 1e-5, 1e-6));
}

}  // namespace

TEST_CASE("fused Adam updates as libtorch's Adam", "[trainer][optimizer]") {
  torch::manual_seed(1);
  // 100,003 elements: four tasks on the ThreadPool, the last one short.
  const std::vector<torch::Tensor> init = {torch::randn({100003}), torch::randn({7, 5}),
                                           torch::randn({3})};
  for (const double wd : {0.0, 0.01}) {
    for (const bool amsgrad : {false, true}) {
      DYNAMIC_SECTION("weight decay " << wd << (amsgrad ? ", amsgrad" : "")) {
        auto options = torch::optim::AdamOptions(1e-2).weight_decay(wd).amsgrad(amsgrad);
        std::vector<torch::Tensor> pa = params_like(init), pb = params_like(init);
        recbole::FusedAdam fused(pa, options);
        torch::optim::Adam plain(pb, options);
        for (int s = 0; s < 5; ++s) step_both(fused, pa, plain, pb, 10 + s, s == 2 ? 1 : 99);
        check_close(pa, pb);
        // The parameter without a gradient at the first step was not moved then: its step
        // count is one behind.
        CHECK_FALSE(torch::equal(pa[0], init[0]));
      }
    }
  }
}

TEST_CASE("fused Adam's state is torch::optim::Adam's", "[trainer][optimizer]") {
  torch::manual_seed(2);
  const std::vector<torch::Tensor> init = {torch::randn({70000}), torch::randn({4, 4})};
  auto options = torch::optim::AdamOptions(1e-2);
  std::vector<torch::Tensor> pa = params_like(init), pb = params_like(init);
  recbole::FusedAdam fused(pa, options);
  torch::optim::Adam plain(pb, options);
  for (int s = 0; s < 3; ++s) step_both(fused, pa, plain, pb, 20 + s, 99);
  // Checkpoint the fused optimizer; a libtorch Adam loads it and goes on as the original does.
  std::stringstream buffer;
  {
    torch::serialize::OutputArchive archive;
    fused.save(archive);
    archive.save_to(buffer);
  }
  std::vector<torch::Tensor> pc = params_like(pa);
  torch::optim::Adam resumed(pc, options);
  {
    torch::serialize::InputArchive archive;
    archive.load_from(buffer);
    resumed.load(archive);
  }
  for (int s = 0; s < 3; ++s) step_both(fused, pa, resumed, pc, 30 + s, 99);
  check_close(pa, pc);
}
