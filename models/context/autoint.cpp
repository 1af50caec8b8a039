#include "models/context/autoint.h"

#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

AutoInt::AutoInt(const ModelContext& ctx) : ContextModel("AutoInt", ctx) {
  const int64_t a = ctx.config.get_int("attention_size");
  const int64_t heads = ctx.config.get_int("num_heads");
  const std::vector<double> dropout = ctx.config.get_double_list("dropout_probs");
  if (dropout.size() < 2)
    throw ConfigError(
        ctx.config.source("dropout_probs") +
        ": AutoInt: dropout_probs: expected 3 probabilities (attention, MLP, unused)");
  if (a % heads != 0)
    throw ConfigError("AutoInt: attention_size " + std::to_string(a) +
                      " is not a multiple of num_heads " + std::to_string(heads));
  att_embedding_ = register_module("att_embedding", torch::nn::Linear(embedding_size_, a));
  for (int64_t l = 0; l < ctx.config.get_int("n_layers"); ++l)
    attention_.push_back(register_module("attention" + std::to_string(l),
                                         layers::MultiHeadSelfAttention(a, heads, dropout[0])));
  if (!ctx.config.is_null("has_residual") && ctx.config.get_bool("has_residual"))
    residual_ = register_module("residual", torch::nn::Linear(embedding_size_, a));
  att_output_ = register_module("att_output", torch::nn::Linear(num_fields_ * a, 1));
  const std::vector<int64_t> sizes = mlp_sizes(ctx, num_fields_ * embedding_size_);
  mlp_ = register_module("mlp", layers::ContextMLP(sizes, dropout[1], "relu"));
  deep_output_ = register_module("deep_output", torch::nn::Linear(sizes.back(), 1));
  finish();
}

torch::Tensor AutoInt::logits(const data::Batch& batch) {
  torch::Tensor e = embed(batch);                // [B, F, d]
  torch::Tensor h = att_embedding_->forward(e);  // [B, F, A]
  for (auto& att : attention_) h = att->forward(h);
  if (residual_) h = h + residual_->forward(e);
  torch::Tensor att = att_output_->forward(torch::relu(h).flatten(1));
  torch::Tensor deep = deep_output_->forward(mlp_->forward(e.flatten(1)));
  return (first_order(batch) + att + deep).squeeze(1);
}

RECBOLE_REGISTER_MODEL(AutoInt) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"AutoInt",
       "context",
       InputType::kPointwise,
       "AutoInt: multi-head self-attention over the field embeddings, an MLP and first-order "
       "weights",
       {keys::embedding_size().decl("Width of the field embeddings"),
        Key("attention_size", KeyType::kInt).min(1).help("Width of the attention layers"),
        Key("n_layers", KeyType::kInt).min(0).help("Number of self-attention layers"),
        Key("num_heads", KeyType::kInt)
            .min(1)
            .help("Attention heads (attention_size must be a multiple)"),
        Key("dropout_probs", KeyType::kFloatList)
            .min(0)
            .help("Dropout of the attention, of the MLP, and a third (unused, as RecBole)"),
        keys::mlp_hidden_size().decl("Sizes of the MLP's hidden layers"),
        Key("has_residual", KeyType::kBool)
            .null()
            .help("Add a Linear residual of the embeddings to the attention output (off when null, "
                  "as RecBole)")},
       [](const ModelContext& ctx) { return std::make_shared<AutoInt>(ctx); }});
}

}  // namespace recbole::models
