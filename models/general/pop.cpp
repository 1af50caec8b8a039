#include "models/general/pop.h"

#include "models/general/fitted_support.h"

namespace recbole::models {

Pop::Pop(const ModelContext& ctx) : Model("Pop", ctx) {
  item_count_ =
      register_buffer("item_count", torch::zeros({ctx.n_items}, ctx.device.long_options()));
}

void Pop::fit() {
  const std::vector<int64_t> deg = train_.item_degrees();
  assign_buffer(item_count_, device_manager().place(torch::tensor(deg, torch::kInt64)));
}

torch::Tensor Pop::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor& users = batch.users;
  torch::Tensor count = item_count_.to(torch::kFloat32);
  // An unfitted or empty model scores every item 0 rather than dividing by zero.
  torch::Tensor score = count / count.max().clamp_min(1.0f);
  return score.unsqueeze(0).repeat({users.size(0), 1});
}

RECBOLE_REGISTER_MODEL(Pop) {
  register_model({"Pop",
                  "general",
                  InputType::kFitOnce,
                  "Items ranked by training popularity (baseline)",
                  {},
                  [](const ModelContext& ctx) { return std::make_shared<Pop>(ctx); }});
}

}  // namespace recbole::models
