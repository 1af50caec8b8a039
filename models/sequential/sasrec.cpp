#include "models/sequential/sasrec.h"

#include "models/layers/dropout.h"
#include "models/layers/key_checks.h"
#include "models/layers/sequence.h"
#include "recbole/config/config.h"

namespace recbole::models {

layers::TransformerOptions transformer_options(const config::Config& c, const char* width_key) {
  layers::TransformerOptions o;
  o.n_layers = c.get_int("n_layers");
  o.n_heads = c.get_int("n_heads");
  o.hidden_size = c.get_int(width_key);
  o.inner_size = c.get_int("inner_size");
  o.hidden_dropout = c.get_double("hidden_dropout_prob");
  o.attn_dropout = c.get_double("attn_dropout_prob");
  o.hidden_act = c.get_string("hidden_act");
  o.layer_norm_eps = c.get_double("layer_norm_eps");
  return o;
}

std::vector<config::KeyDecl> transformer_keys() {
  using config::Key;
  using config::KeyType;
  return {Key("n_layers", KeyType::kInt).min(1).help("Transformer layers"),
          Key("n_heads", KeyType::kInt).min(1).help("Attention heads (hidden_size % n_heads == 0)"),
          Key("hidden_size", KeyType::kInt).min(1).help("Dimension of items and states"),
          Key("inner_size", KeyType::kInt).min(1).help("Width of the feed-forward layer"),
          layers::probability_key("hidden_dropout_prob").help("Dropout of the layers' outputs"),
          layers::probability_key("attn_dropout_prob").help("Dropout of the attention weights"),
          Key("hidden_act", KeyType::kString)
              .choices({"gelu", "relu", "swish", "tanh", "sigmoid"})
              .help("Activation of the feed-forward layer"),
          Key("layer_norm_eps", KeyType::kFloat).above(0).help("LayerNorm epsilon"),
          Key("initializer_range", KeyType::kFloat).above(0).help("Std of the normal init"),
          Key("loss_type", KeyType::kString)
              .choices({"CE", "BPR"})
              .help("CE over every item, or BPR with a sampled negative")};
}

SASRec::SASRec(const ModelContext& ctx)
    : SequentialModel("SASRec", ctx), dropout_(ctx.config.get_double("hidden_dropout_prob")) {
  const layers::TransformerOptions o = transformer_options(ctx.config);
  const double std = ctx.config.get_double("initializer_range");
  const int64_t d = o.hidden_size;
  item_embedding_ =
      register_parameter("item_embedding", torch::empty({ctx.n_items, d}).normal_(0.0, std));
  position_embedding_ =
      register_parameter("position_embedding", torch::empty({max_len_, d}).normal_(0.0, std));
  encoder_ = register_module("encoder", layers::TransformerEncoder(o));
  layer_norm_ = register_module(
      "layer_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(o.layer_norm_eps)));
  layers::init_transformer_weights(*this, std);
  to(ctx.device.device());
}

torch::Tensor SASRec::encode_all(const torch::Tensor& item_seq) {
  const int64_t L = item_seq.size(1);
  torch::Tensor x = lookup(item_seq) + position_embedding_.narrow(0, 0, L).unsqueeze(0);
  x = layers::dropout(layer_norm_->forward(x), dropout_, is_training());
  return encoder_->forward(x, layers::attention_mask(item_seq, /*causal=*/true));
}

torch::Tensor SASRec::encode(const data::Batch& batch) {
  // Positions after a row's last item are never read by its earlier positions (causal mask):
  // the batch's columns past its longest sequence can be left out.
  const int64_t longest = layers::item_seq_len(batch).max().item<int64_t>();
  return layers::gather_last(encode_all(layers::item_seq(batch).narrow(1, 0, longest)),
                             layers::item_seq_len(batch));
}

RECBOLE_REGISTER_MODEL(SASRec) {
  register_model({"SASRec", "sequential", InputType::kNextItem,
                  "Self-attentive sequential recommendation: a causal transformer over the "
                  "item sequence",
                  transformer_keys(),
                  [](const ModelContext& ctx) { return std::make_shared<SASRec>(ctx); }});
}

}  // namespace recbole::models
