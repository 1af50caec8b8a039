#pragma once
// Interval strings of RecBole's val_interval / *_inter_num_interval keys: one or more intervals
// joined by ';', each "[a,b]", "[a,b)", "(a,b]" or "(a,b)"; endpoints are Python floats
// ("inf", "-inf", "1e3"). A value lies in the set when it lies in any interval.
#include <string>
#include <vector>

namespace recbole::data {

struct Interval {
  bool left_closed = true;
  double left = 0;
  double right = 0;
  bool right_closed = true;

  bool contains(double x) const {
    return (left_closed ? x >= left : x > left) && (right_closed ? x <= right : x < right);
  }
};

struct IntervalSet {
  std::vector<Interval> intervals;  // as written, in order
  bool contains(double x) const {
    for (const Interval& i : intervals) {
      if (i.contains(x)) return true;
    }
    return false;
  }
};

// Parses `text`; `key` names the setting in the error message (recbole::ConfigError
// "key: cannot parse interval ...").
IntervalSet parse_intervals(const std::string& text, const std::string& key);

}  // namespace recbole::data
