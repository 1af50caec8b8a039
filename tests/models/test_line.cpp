// LINE's loss against the hand formula in both branches and both orders, and its per-batch
// draws: keyed by (seed, epoch, batch), negative users outside the item's users.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/general/line.h"
#include "tests/models/model_fixture.h"

using recbole::testing::cpu_model_config;
using recbole::testing::ModelHarness;
using recbole::testing::param;
using recbole::testing::TinyData;

namespace {

double l(const torch::Tensor& s, double sign) {
  return -torch::log(torch::sigmoid(sign * s)).mean().item<double>();
}

torch::Tensor rows(const torch::Tensor& table, const std::vector<int64_t>& ids) {
  return table.index_select(0, torch::tensor(ids, torch::kInt64));
}

torch::Tensor dots(const torch::Tensor& a, const torch::Tensor& b) { return (a * b).sum(1); }

}  // namespace

TEST_CASE("LINE's loss is the hand formula in both branches, orders 1 and 2", "[models][line]") {
  TinyData d;
  const std::vector<int64_t> users{1, 5, 5, 17, 39}, items{2, 8, 3, 20, 1}, negs{9, 4, 29, 4, 13};
  recbole::data::Batch batch;
  batch.users = torch::tensor(users, torch::kInt64);
  batch.items = torch::tensor(items, torch::kInt64);
  batch.neg_items = torch::tensor(negs, torch::kInt64);
  for (const char* order : {"1", "2"}) {
    DYNAMIC_SECTION("order " << order) {
      ModelHarness h(
          cpu_model_config("LINE", {{"order", order}, {"second_order_loss_weight", "0.7"}}), d);
      auto m = h.create();
      auto* line = dynamic_cast<recbole::models::LINE*>(m.get());
      REQUIRE(line != nullptr);
      CHECK(m->named_parameters().size() == (std::string(order) == "2" ? 4u : 2u));
      const torch::Tensor ue = param(*m, "user_embedding"), ie = param(*m, "item_embedding");
      const bool second = std::string(order) == "2";
      const torch::Tensor uc = second ? param(*m, "user_context_embedding") : torch::Tensor();
      const torch::Tensor ic = second ? param(*m, "item_context_embedding") : torch::Tensor();
      m->train();
      m->on_epoch_start(3);
      int branches[2] = {0, 0};
      for (int64_t b = 0; b < 12; ++b) {
        const auto draws = line->batch_draws(3, b, items);
        const double got = m->calculate_loss(h.device.place(batch)).item<double>();
        const torch::Tensor u = rows(ue, users), pos = rows(ie, items);
        double want = l(dots(u, pos), 1);
        if (!draws.negative_users) {
          want += l(dots(u, rows(ie, negs)), -1);
          if (second)
            want += 0.7 * (l(dots(u, rows(ic, items)), 1) + l(dots(u, rows(ic, negs)), -1));
        } else {
          REQUIRE(draws.users.size() == items.size());
          for (size_t k = 0; k < items.size(); ++k) {
            CHECK(draws.users[k] >= 1);
            CHECK(draws.users[k] < d.n_users);
            CHECK_FALSE(d.train.contains(static_cast<int32_t>(draws.users[k]),
                                         static_cast<int32_t>(items[k])));
          }
          want += l(dots(rows(ue, draws.users), pos), -1);
          if (second)
            want +=
                0.7 * (l(dots(pos, rows(uc, users)), 1) + l(dots(pos, rows(uc, draws.users)), -1));
        }
        ++branches[draws.negative_users ? 1 : 0];
        CHECK(got == Approx(want).epsilon(1e-5));
      }
      // Both branches occur in 12 batches.
      CHECK(branches[0] > 0);
      CHECK(branches[1] > 0);
    }
  }
}

TEST_CASE("LINE's draws are keyed by (seed, epoch, batch) and the counter is training state",
          "[models][line]") {
  TinyData d;
  ModelHarness h(cpu_model_config("LINE"), d);
  auto m = h.create();
  auto* line = dynamic_cast<recbole::models::LINE*>(m.get());
  REQUIRE(line != nullptr);
  std::vector<int64_t> items(64);
  for (size_t k = 0; k < items.size(); ++k) items[k] = 1 + static_cast<int64_t>(k % 26);
  // Find a batch with negative users; it repeats exactly, another key differs.
  int64_t b = 0;
  while (!line->batch_draws(0, b, items).negative_users) ++b;
  const auto first = line->batch_draws(0, b, items);
  CHECK(line->batch_draws(0, b, items).users == first.users);
  const auto other_epoch = line->batch_draws(1, b, items);
  CHECK((!other_epoch.negative_users || other_epoch.users != first.users));
  ModelHarness h7(cpu_model_config("LINE", {{"seed", "7"}}), d);
  auto m7 = h7.create();
  const auto seeded = dynamic_cast<recbole::models::LINE&>(*m7).batch_draws(0, b, items);
  CHECK((!seeded.negative_users || seeded.users != first.users));

  // The epoch and batch counter survive a save / load of the training state.
  recbole::data::Batch batch;
  batch.users = torch::tensor(std::vector<int64_t>{1, 2}, torch::kInt64);
  batch.items = torch::tensor(std::vector<int64_t>{2, 3}, torch::kInt64);
  batch.neg_items = torch::tensor(std::vector<int64_t>{4, 5}, torch::kInt64);
  m->train();
  m->on_epoch_start(2);
  for (int k = 0; k < 3; ++k) m->calculate_loss(batch);
  torch::serialize::OutputArchive out;
  m->save_training_state(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  const double next = m->calculate_loss(batch).item<double>();
  m->on_epoch_start(5);  // moves the counter elsewhere
  torch::serialize::InputArchive in;
  std::istringstream read(bytes.str());
  in.load_from(read);
  m->load_training_state(in);
  // Batch 3 of epoch 2 again: the same draws, so the same loss (no step was taken).
  CHECK(m->calculate_loss(batch).item<double>() == next);
}
