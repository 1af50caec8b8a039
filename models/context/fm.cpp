#include "models/context/fm.h"
#include "models/shared_keys.h"

#include "recbole/config/config.h"

namespace recbole::models {

FM::FM(const ModelContext& ctx) : ContextModel("FM", ctx) { finish(/*init_linears=*/false); }

torch::Tensor FM::logits(const data::Batch& batch) {
  return (first_order(batch) + layers::fm_interaction(embed(batch))).squeeze(1);
}

RECBOLE_REGISTER_MODEL(FM) {
  using config::Key;
  using config::KeyType;
  register_model({"FM",
                  "context",
                  InputType::kPointwise,
                  "factorisation machine: first-order weights plus pairwise embedding products",
                  {keys::embedding_size().decl("Width of the field embeddings")},
                  [](const ModelContext& ctx) { return std::make_shared<FM>(ctx); }});
}

}  // namespace recbole::models
