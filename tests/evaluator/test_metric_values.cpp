// MetricValues' JSON: the result file's shape, in the evaluator's order when read back as
// ordered_json.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "recbole/evaluator/metric_values.h"
#include "recbole/utils/error.h"

using recbole::evaluator::metric_values_from_json;
using recbole::evaluator::metric_values_to_json;
using recbole::evaluator::MetricValues;

TEST_CASE("metric values are a JSON object that keeps their order", "[evaluator]") {
  const MetricValues values = {{"recall@10", 0.25}, {"mrr@10", 0.5}, {"ndcg@10", 0.125}};
  const nlohmann::ordered_json j = metric_values_to_json(values);
  CHECK(j.dump() == R"({"recall@10":0.25,"mrr@10":0.5,"ndcg@10":0.125})");
  CHECK(metric_values_from_json(nlohmann::ordered_json::parse(j.dump())) == values);
  // In a nlohmann::json (the result file) the names are sorted, as the result file has them.
  nlohmann::json result;
  result["test_result"] = metric_values_to_json(values);
  CHECK(result.dump() == R"({"test_result":{"mrr@10":0.5,"ndcg@10":0.125,"recall@10":0.25}})");
  CHECK(metric_values_to_json({}).dump() == "{}");
  CHECK(metric_values_from_json(nlohmann::ordered_json::object()).empty());
  CHECK_THROWS_AS(metric_values_from_json(nlohmann::ordered_json::parse("[[\"mrr@10\", 0.5]]")),
                  recbole::Error);
  CHECK_THROWS_AS(metric_values_from_json(nlohmann::ordered_json(0.5)), recbole::Error);
}
