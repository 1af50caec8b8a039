#pragma once
// MetricValues, the results of one evaluation, and their JSON: one shape for the result file
// (run/run_recbole.h) and the resume checkpoint (trainer/resume_state.h).
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace recbole::evaluator {

// (name, value) per metric × topk ("recall@10", 0.2466), in RecBole's order of the metrics.
using MetricValues = std::vector<std::pair<std::string, double>>;

// {"recall@10": 0.2466, "mrr@10": 0.4895, ...}. An ordered_json keeps the order of `values` in
// its text; put into a nlohmann::json (the result file) the names come out sorted, as they
// always have there.
nlohmann::ordered_json metric_values_to_json(const MetricValues& values);

// The values of such an object, in the object's order: parse the text as ordered_json to get
// them back in the order they were written. Error for anything but an object; nlohmann's
// type_error for a value that is not a number.
MetricValues metric_values_from_json(const nlohmann::ordered_json& j);

}  // namespace recbole::evaluator
