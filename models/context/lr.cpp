#include "models/context/lr.h"
#include "models/shared_keys.h"

#include "recbole/config/config.h"

namespace recbole::models {

LR::LR(const ModelContext& ctx) : ContextModel("LR", ctx) { finish(/*init_linears=*/false); }

torch::Tensor LR::logits(const data::Batch& batch) { return first_order(batch).squeeze(1); }

RECBOLE_REGISTER_MODEL(LR) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"LR",
       "context",
       InputType::kPointwise,
       "logistic regression: one weight per feature value, summed with a bias",
       {keys::embedding_size().decl("Width of the (unused) second-order feature embeddings")},
       [](const ModelContext& ctx) { return std::make_shared<LR>(ctx); }});
}

}  // namespace recbole::models
