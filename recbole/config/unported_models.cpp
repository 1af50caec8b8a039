#include "recbole/config/unported_models.h"

#include <algorithm>
#include <sstream>
#include <utility>

namespace recbole::config {

// Model name → the keys of its RecBole 1.2.1 model file, in file order.
const std::vector<std::pair<std::string, std::string>>& unported_model_files() {
  static const std::vector<std::pair<std::string, std::string>> models = {
      {"DGCF", "embedding_size n_factors n_iterations n_layers reg_weight cor_weight"},
      {"DIEN", "embedding_size mlp_hidden_size dropout_prob pooling_mode gru_type alpha"},
      {"DIN", "embedding_size mlp_hidden_size dropout_prob pooling_mode"},
      {"FDSA",
       "n_layers n_heads hidden_size inner_size hidden_dropout_prob attn_dropout_prob "
       "hidden_act layer_norm_eps initializer_range selected_features pooling_mode loss_type"},
      {"FEARec",
       "n_layers n_heads hidden_size inner_size hidden_dropout_prob attn_dropout_prob "
       "hidden_act layer_norm_eps initializer_range loss_type lmd lmd_sem global_ratio "
       "dual_domain std spatial_ratio fredom fredom_type topk_factor"},
      {"FOSSIL", "embedding_size loss_type reg_weight order_len alpha"},
      {"GRU4RecCPR",
       "embedding_size hidden_size num_layers dropout_prob loss_type use_out_emb n_facet_all "
       "n_facet n_facet_context n_facet_reranker reranker_CAN_NUM n_facet_emb n_facet_hidden "
       "n_facet_window n_facet_MLP weight_mode context_norm partition_merging_mode "
       "reranker_merging_mode use_proj_bias post_remove_context"},
      {"GRU4RecF",
       "embedding_size hidden_size num_layers dropout_prob selected_features pooling_mode "
       "loss_type"},
      {"GRU4RecKG", "embedding_size hidden_size num_layers dropout_prob freeze_kg loss_type"},
      {"HGN", "embedding_size loss_type pooling_type reg_weight"},
      {"HRM",
       "embedding_size high_order loss_type dropout_prob pooling_type_layer_1 "
       "pooling_type_layer_2"},
      {"KSR", "embedding_size hidden_size num_layers dropout_prob loss_type freeze_kg gamma"},
      {"NPE", "embedding_size loss_type dropout_prob"},
      {"RaCT",
       "mlp_hidden_size latent_dimension dropout_prob anneal_cap total_anneal_steps "
       "critic_layers metrics_k train_stage pretrain_epochs save_step pre_model_path"},
      {"RepeatNet", "embedding_size hidden_size joint_train dropout_prob loss_type"},
      {"S3Rec",
       "n_layers n_heads hidden_size inner_size hidden_dropout_prob attn_dropout_prob "
       "hidden_act layer_norm_eps initializer_range item_attribute mask_ratio aap_weight "
       "mip_weight map_weight sp_weight train_stage pretrain_epochs save_step pre_model_path "
       "loss_type"},
      {"SASRecCPR",
       "n_layers n_heads hidden_size inner_size hidden_dropout_prob attn_dropout_prob "
       "hidden_act layer_norm_eps initializer_range loss_type n_facet_all n_facet "
       "n_facet_context n_facet_reranker reranker_CAN_NUM n_facet_emb n_facet_hidden "
       "n_facet_window n_facet_MLP weight_mode context_norm partition_merging_mode "
       "reranker_merging_mode use_proj_bias post_remove_context"},
      {"SASRecF",
       "n_layers n_heads hidden_size inner_size hidden_dropout_prob attn_dropout_prob "
       "hidden_act layer_norm_eps initializer_range selected_features pooling_mode loss_type"},
      {"SHAN", "embedding_size short_item_length loss_type reg_weight"},
      {"SINE",
       "embedding_size layer_norm_eps prototype_size interest_size tau_ratio reg_loss_ratio "
       "loss_type"},
      {"TransRec", "embedding_size"},
      {"lightgbm",
       "convert_token_to_onehot token_num_threhold lgb_params lgb_num_boost_round "
       "lgb_verbose_eval"},
      {"xgboost",
       "convert_token_to_onehot token_num_threhold xgb_silent xgb_nthread xgb_model "
       "xgb_params xgb_num_boost_round lgb_early_stopping_rounds xgb_verbose_eval"},
  };
  return models;
}

std::vector<std::string> unported_models_with_key(const std::string& key) {
  std::vector<std::string> found;
  for (const auto& [model, keys] : unported_model_files()) {
    std::istringstream words(keys);
    std::string k;
    while (words >> k)
      if (k == key) {
        found.push_back(model);
        break;
      }
  }
  std::sort(found.begin(), found.end());
  return found;
}

bool is_unported_model(const std::string& model) {
  const auto& models = unported_model_files();
  return std::any_of(models.begin(), models.end(),
                     [&](const auto& entry) { return entry.first == model; });
}

}  // namespace recbole::config
