#include "recbole/evaluator/metric_values.h"

#include "recbole/utils/error.h"

namespace recbole::evaluator {

nlohmann::ordered_json metric_values_to_json(const MetricValues& values) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : values) j[k] = v;
  return j;
}

MetricValues metric_values_from_json(const nlohmann::ordered_json& j) {
  // items() of a number would give one nameless value: refuse anything but an object.
  if (!j.is_object())
    throw Error(std::string("metric values: expected a JSON object {\"name\": value}, got ") +
                j.type_name());
  MetricValues values;
  for (const auto& [k, v] : j.items()) values.emplace_back(k, v.get<double>());
  return values;
}

}  // namespace recbole::evaluator
