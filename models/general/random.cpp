#include "models/general/random.h"

#include "models/general/fitted_support.h"
#include "recbole/config/config.h"
#include "recbole/utils/splitmix.h"

namespace recbole::models {

Random::Random(const ModelContext& ctx) : Model("Random", ctx) {
  const int64_t seed = ctx.config.has("seed") ? ctx.config.get_int("seed") : 2020;
  seed_ = register_buffer("seed", ctx.device.place(torch::tensor({seed}, torch::kInt64)));
}

torch::Tensor Random::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor& users = batch.users;
  const std::vector<int64_t> u = to_vector(users);
  const uint64_t seed = static_cast<uint64_t>(DeviceManager::to_host(seed_).item<int64_t>());
  const int64_t n = n_items();
  torch::Tensor out = torch::empty({static_cast<int64_t>(u.size()), n}, torch::kFloat32);
  float* p = out.data_ptr<float>();
  for (size_t r = 0; r < u.size(); ++r) {
    // Key the stream by (seed, user): mixing the user id through one SplitMix64 step keeps
    // neighbouring ids' streams unrelated.
    uint64_t key = static_cast<uint64_t>(u[r]);
    uint64_t state = seed ^ splitmix64_next(key);
    float* row = p + r * n;
    // The top 24 bits give floats exactly representable in [0, 1).
    for (int64_t i = 0; i < n; ++i)
      row[i] = static_cast<float>(splitmix64_next(state) >> 40) * 0x1.0p-24f;
  }
  return device_manager().place(out);
}

RECBOLE_REGISTER_MODEL(Random) {
  register_model({"Random",
                  "general",
                  InputType::kFitOnce,
                  "Independent seeded random ranking per user (baseline)",
                  {},
                  [](const ModelContext& ctx) { return std::make_shared<Random>(ctx); }});
}

}  // namespace recbole::models
