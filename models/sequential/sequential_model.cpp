#include "models/sequential/sequential_model.h"

#include <algorithm>

#include "models/layers/backward_parts.h"
#include "models/layers/item_cross_entropy.h"
#include "models/layers/losses.h"
#include "models/layers/sequence.h"
#include "recbole/config/config.h"
#include "recbole/runtime/fast_path.h"

namespace recbole::models {

SequentialModel::SequentialModel(std::string name, const ModelContext& ctx)
    : Model(std::move(name), ctx), max_len_(ctx.config.get_int("MAX_ITEM_LIST_LENGTH")) {
  if (ctx.config.has("loss_type")) bpr_ = ctx.config.get_string("loss_type") == "BPR";
}

InputType SequentialModel::input_type() const {
  return bpr_ ? InputType::kPairwise : Model::input_type();
}

torch::Tensor SequentialModel::lookup(const torch::Tensor& ids) const {
  return torch::embedding(item_embedding_, ids, /*padding_idx=*/0);
}

torch::Tensor SequentialModel::calculate_loss(const data::Batch& batch) {
  const torch::Tensor h = encode(batch);
  const torch::Tensor items = output_items();
  if (bpr_) {
    const torch::Tensor pos = (h * torch::embedding(items, batch.items, 0)).sum(-1);
    const torch::Tensor neg = (h * torch::embedding(items, batch.neg_items, 0)).sum(-1);
    return layers::bpr_loss(pos, neg);
  }
  return layers::item_cross_entropy(h, items, {}, batch.items) / static_cast<double>(h.size(0));
}

data::Batch SequentialModel::longest_first(const data::Batch& batch) {
  const torch::Tensor order = std::get<1>(
      torch::sort(layers::item_seq_len(batch), /*stable=*/true, /*dim=*/0, /*descending=*/true));
  return batch.index_select(order);
}

torch::Tensor SequentialModel::train_step(const data::Batch& batch, TrainStep& step) {
  const data::Batch sorted = longest_first(batch);
  const int64_t rows = sorted.size();
  return step_in_parts(step, rows, [&](int64_t start, int64_t n) {
    return calculate_loss(sorted.narrow(start, n)) *
           (static_cast<double>(n) / static_cast<double>(rows));
  });
}

torch::Tensor SequentialModel::step_in_parts(
    TrainStep& step, int64_t rows,
    const std::function<torch::Tensor(int64_t, int64_t)>& part_loss) {
  const torch::Tensor total = layers::backward_parts(
      parameters(), (rows + kMicroBatch - 1) / kMicroBatch,
      [&](int64_t k) {
        const int64_t start = k * kMicroBatch;
        return part_loss(start, std::min(kMicroBatch, rows - start));
      },
      [&](const torch::Tensor& loss) { device_manager().check(loss, name(), "loss"); });
  step.finish_gradients();
  step.optimizer().step();
  return total;
}

torch::Tensor SequentialModel::full_sort_predict(const data::Batch& batch) {
  return torch::matmul(encode(batch), output_items().t());
}

torch::Tensor SequentialModel::predict(const data::Batch& batch) {
  return score_items(encode(batch), batch.items);
}

torch::Tensor SequentialModel::predict_candidates(const data::Batch& batch, int64_t candidate_num) {
  const int64_t rows = batch.size();
  if (candidate_num <= 1 || rows % candidate_num != 0) return predict(batch);
  const int64_t n = rows / candidate_num;
  // Rows [0, n) hold every sequence once. On the CPU they are encoded in parts of kMicroBatch
  // rows on the pool, as train_step's forward runs (encode is thread-safe for it).
  const int64_t parts = item_embedding_.device().is_cpu() && fast_paths_enabled()
                            ? (n + kMicroBatch - 1) / kMicroBatch
                            : 1;
  const int64_t part_rows = (n + parts - 1) / parts;
  std::vector<torch::Tensor> h(static_cast<size_t>(parts));
  const bool grad = torch::GradMode::is_enabled();
  auto encode_part = [&](size_t k) {
    torch::AutoGradMode mode(grad);  // the caller's, on the pool's thread
    const int64_t start = static_cast<int64_t>(k) * part_rows;
    h[k] = encode(batch.narrow(start, std::min(part_rows, n - start)));
  };
  if (parts == 1)
    encode_part(0);
  else
    layers::on_pool(parts, encode_part);
  return score_items(torch::cat(h).repeat({candidate_num, 1}), batch.items);
}

}  // namespace recbole::models
