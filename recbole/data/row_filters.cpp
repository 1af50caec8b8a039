#include "recbole/data/row_filters.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "recbole/data/interval.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/text.h"

namespace recbole::data {

void filter_missing_ids(DatasetTables& tables, const DatasetOptions& opt) {
  auto drop_missing = [](Table& t, const std::string& field) {
    const std::vector<int32_t>& ids = t.column(field).tokens;
    std::vector<uint8_t> keep(ids.size());
    int64_t dropped = 0;
    for (size_t r = 0; r < ids.size(); ++r) {
      keep[r] = ids[r] >= 0;
      dropped += keep[r] ? 0 : 1;
    }
    if (dropped > 0) {
      log::warning(t.source() + ": " + std::to_string(dropped) + " rows without " + field +
                   " removed");
      t.filter(keep);
    }
  };
  if (tables.user) drop_missing(*tables.user, opt.uid_field);
  drop_missing(tables.inter, opt.uid_field);
  if (tables.item) drop_missing(*tables.item, opt.iid_field);
  drop_missing(tables.inter, opt.iid_field);
  tables.check_not_empty("dropping rows with a missing user or item id");
}

void remove_duplication(DatasetTables& tables, const DatasetOptions& opt,
                        const Vocabularies& vocabularies) {
  const std::string& keep_mode = opt.rm_dup_inter;
  if (keep_mode.empty()) return;
  Table& inter = tables.inter;
  const int64_t n = inter.n_rows();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (inter.has(opt.time_field) && inter.column(opt.time_field).type == FieldType::kFloat) {
    const std::vector<double>& time = inter.column(opt.time_field).floats;
    // Ascending, NaN last (pandas' na_position="last"); stable where pandas is not.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const double x = time[a], y = time[b];
      if (std::isnan(y)) return !std::isnan(x);
      return x < y;
    });
    log::info("Records in original dataset have been sorted by value of [" + opt.time_field +
              "] in ascending order.");
  } else {
    log::warning("Timestamp field has not been loaded or specified, thus strategy [" + keep_mode +
                 "] of duplication removal may be meaningless.");
  }
  // Group positions of the sorted order by user; within a user, mark the first (or last)
  // occurrence of each item.
  const std::vector<int32_t>& users = inter.column(opt.uid_field).tokens;
  const std::vector<int32_t>& items = inter.column(opt.iid_field).tokens;
  const size_t n_u = static_cast<size_t>(vocabularies.at(opt.uid_field)->size());
  const size_t n_i = static_cast<size_t>(vocabularies.at(opt.iid_field)->size());
  std::vector<int64_t> start(n_u + 1, 0);
  for (int64_t r = 0; r < n; ++r) ++start[static_cast<size_t>(users[r]) + 1];
  for (size_t u = 0; u < n_u; ++u) start[u + 1] += start[u];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  std::vector<int64_t> grouped(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) grouped[fill[users[order[p]]]++] = p;
  fill = {};
  std::vector<int32_t> seen(n_i, -1);
  std::vector<uint8_t> keep(static_cast<size_t>(n), 0);
  const bool first = keep_mode == "first";
  for (size_t u = 0; u < n_u; ++u) {
    const int64_t b = start[u], e = start[u + 1];
    for (int64_t k = 0; k < e - b; ++k) {
      const int64_t p = grouped[first ? b + k : e - 1 - k];
      const int32_t item = items[order[p]];
      if (seen[item] != static_cast<int32_t>(u)) {
        seen[item] = static_cast<int32_t>(u);
        keep[p] = 1;
      }
    }
  }
  grouped = {};
  std::vector<int64_t> rows;
  rows.reserve(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) {
    if (keep[p]) rows.push_back(order[p]);
  }
  const int64_t removed = n - static_cast<int64_t>(rows.size());
  order = {};
  keep = {};
  inter.take(rows);
  if (removed > 0) log::info(std::to_string(removed) + " duplicate interactions removed");
}

void filter_by_value(DatasetTables& tables, const DatasetOptions& opt,
                     const std::vector<std::string>& field_names) {
  for (const ValueFilter& f : opt.val_interval) {
    const std::string key = "val_interval." + f.field;
    bool found = false;
    for (Table* t : tables.all()) {
      if (!t->has(f.field)) continue;
      found = true;
      const Column& c = t->column(f.field);
      std::vector<uint8_t> keep(static_cast<size_t>(t->n_rows()));
      if (c.type == FieldType::kFloat) {
        if (f.is_token_list) {
          throw ConfigError(key + ": " + f.field + " is a float field, expected an interval " +
                            "string such as \"[3,inf)\", got a list");
        }
        const IntervalSet set = parse_intervals(f.interval, key);
        for (size_t r = 0; r < keep.size(); ++r) keep[r] = set.contains(c.floats[r]);
      } else if (c.type == FieldType::kToken) {
        if (!f.is_token_list) {
          throw ConfigError(key + ": " + f.field + " is a token field, expected a list of " +
                            "tokens to keep, got \"" + f.interval + "\"");
        }
        std::vector<uint8_t> allowed(static_cast<size_t>(c.vocab->size()), 0);
        for (const std::string& tok : f.tokens) {
          const int32_t id = c.vocab->find(tok);
          if (id >= 0) allowed[static_cast<size_t>(id)] = 1;
        }
        for (size_t r = 0; r < keep.size(); ++r) {
          keep[r] = c.tokens[r] >= 0 && allowed[static_cast<size_t>(c.tokens[r])];
        }
      } else {
        throw ConfigError(key + ": " + f.field + " is a sequence field (" +
                          field_type_name(c.type) + "), which val_interval cannot filter");
      }
      t->filter(keep);
    }
    if (!found) {
      throw DataError(key + ": field " + f.field + " is not a loaded column of dataset " +
                      opt.dataset + " (loaded: " + join(field_names, ", ") + ")");
    }
    tables.check_not_empty("val_interval " + f.field);
  }
}

void filter_inter_by_user_or_item(DatasetTables& tables, const DatasetOptions& opt,
                                  const Vocabularies& vocabularies) {
  if (!opt.filter_inter_by_user_or_item) return;
  if (!tables.user && !tables.item) return;
  Table& inter = tables.inter;
  std::vector<uint8_t> keep(static_cast<size_t>(inter.n_rows()), 1);
  auto restrict_to = [&](const Table& feat, const std::string& field) {
    std::vector<uint8_t> present(static_cast<size_t>(vocabularies.at(field)->size()), 0);
    for (int32_t id : feat.column(field).tokens) present[static_cast<size_t>(id)] = 1;
    const std::vector<int32_t>& ids = inter.column(field).tokens;
    for (size_t r = 0; r < keep.size(); ++r) keep[r] &= present[static_cast<size_t>(ids[r])];
  };
  if (tables.user) restrict_to(*tables.user, opt.uid_field);
  if (tables.item) restrict_to(*tables.item, opt.iid_field);
  inter.filter(keep);
  tables.check_not_empty("filter_inter_by_user_or_item");
}

void filter_by_inter_num(DatasetTables& tables, const DatasetOptions& opt,
                         const Vocabularies& vocabularies) {
  std::optional<IntervalSet> user_iv, item_iv;
  if (!opt.user_inter_num_interval.empty()) {
    user_iv = parse_intervals(opt.user_inter_num_interval, "user_inter_num_interval");
  }
  if (!opt.item_inter_num_interval.empty()) {
    item_iv = parse_intervals(opt.item_inter_num_interval, "item_inter_num_interval");
  }
  if (!user_iv && !item_iv) return;
  for (const auto& [iv, key] : {std::pair{&user_iv, "user_inter_num_interval"},
                                std::pair{&item_iv, "item_inter_num_interval"}}) {
    if (*iv && (*iv)->intervals.size() > 1) {
      log::warning(std::string(key) + ": more than one interval of interaction number given");
    }
  }
  Table& inter = tables.inter;
  const size_t n_u = static_cast<size_t>(vocabularies.at(opt.uid_field)->size());
  const size_t n_i = static_cast<size_t>(vocabularies.at(opt.iid_field)->size());
  // A side without an interval keeps an empty counter, as RecBole does: nothing is banned there.
  std::vector<int64_t> user_count(user_iv ? n_u : 0, 0), item_count(item_iv ? n_i : 0, 0);
  {
    const std::vector<int32_t>& users = inter.column(opt.uid_field).tokens;
    const std::vector<int32_t>& items = inter.column(opt.iid_field).tokens;
    for (size_t r = 0; r < users.size(); ++r) {
      if (user_iv) ++user_count[static_cast<size_t>(users[r])];
      if (item_iv) ++item_count[static_cast<size_t>(items[r])];
    }
  }
  // Ids whose count is outside the interval(s), plus ids of the feature table whose count is
  // below the lower end of the first interval (strict <, as RecBole).
  auto banned_ids = [](const std::optional<IntervalSet>& iv, const std::vector<int64_t>& count,
                       const std::optional<Table>& feat, const std::string& field,
                       std::vector<uint8_t>& ban) {
    bool any = false;
    std::fill(ban.begin(), ban.end(), 0);
    if (!iv) return false;
    for (size_t id = 0; id < count.size(); ++id) {
      if (count[id] > 0 && !iv->contains(static_cast<double>(count[id]))) {
        ban[id] = 1;
        any = true;
      }
    }
    if (feat) {
      const double min_num = iv->intervals.front().left;
      for (int32_t id : feat->column(field).tokens) {
        if (static_cast<double>(count[static_cast<size_t>(id)]) < min_num) {
          ban[static_cast<size_t>(id)] = 1;
          any = true;
        }
      }
    }
    return any;
  };
  std::vector<uint8_t> ban_user(n_u, 0), ban_item(n_i, 0);
  int rounds = 0;
  while (true) {
    const bool any_user = banned_ids(user_iv, user_count, tables.user, opt.uid_field, ban_user);
    const bool any_item = banned_ids(item_iv, item_count, tables.item, opt.iid_field, ban_item);
    if (!any_user && !any_item) break;
    ++rounds;
    auto drop_feat = [](std::optional<Table>& feat, const std::string& field,
                        const std::vector<uint8_t>& ban) {
      if (!feat) return;
      const std::vector<int32_t>& ids = feat->column(field).tokens;
      std::vector<uint8_t> keep(ids.size());
      for (size_t r = 0; r < ids.size(); ++r) keep[r] = !ban[static_cast<size_t>(ids[r])];
      feat->filter(keep);
    };
    drop_feat(tables.user, opt.uid_field, ban_user);
    drop_feat(tables.item, opt.iid_field, ban_item);
    const std::vector<int32_t>& users = inter.column(opt.uid_field).tokens;
    const std::vector<int32_t>& items = inter.column(opt.iid_field).tokens;
    std::vector<uint8_t> keep(users.size());
    for (size_t r = 0; r < users.size(); ++r) {
      const size_t u = static_cast<size_t>(users[r]), i = static_cast<size_t>(items[r]);
      const bool drop = ban_user[u] || ban_item[i];
      keep[r] = !drop;
      if (drop) {
        if (user_iv) --user_count[u];
        if (item_iv) --item_count[i];
      }
    }
    inter.filter(keep);
  }
  log::debug("interaction-number filter converged after " + std::to_string(rounds) + " rounds");
  tables.check_not_empty("user_inter_num_interval / item_inter_num_interval");
}

}  // namespace recbole::data
