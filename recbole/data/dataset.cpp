#include "recbole/data/dataset.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

#include "recbole/data/atomic_file.h"
#include "recbole/data/interval.h"
#include "recbole/data/preload_weight.h"
#include "recbole/utils/clock.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/text.h"

namespace recbole::data {

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: positional for 1e-4 <= |x| < 1e16.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string sign;
  if (mantissa[0] == '-') {
    sign = "-";
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exponent < 0 ? "e-" : "e+";
    const int a = std::abs(exponent);
    if (a < 10) out += "0";
    out += std::to_string(a);
    return out;
  }
  std::string out;
  if (exponent < 0) {
    out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else {
    const size_t int_len = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_len) {
      out = digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  }
  return sign + out;
}

namespace {

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// numpy's pairwise summation of float64 (add.reduce: first element, then the pairwise sum of the
// rest), so that NaN fills use the very mean pandas computes.
double pairwise_sum(const double* a, int64_t n) {
  if (n < 8) {
    double res = 0.;
    for (int64_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

double numpy_sum(const std::vector<double>& v) {
  if (v.empty()) return 0.;
  return v[0] + pairwise_sum(v.data() + 1, static_cast<int64_t>(v.size()) - 1);
}

std::vector<std::string> column_names(const Table& t) {
  std::vector<std::string> out;
  for (const Column& c : t.columns()) out.push_back(c.name);
  return out;
}

// "name:type" of each column, for messages where the types matter.
std::vector<std::string> column_headers(const Table& t) {
  std::vector<std::string> out;
  for (const Column& c : t.columns()) out.push_back(c.header());
  return out;
}

}  // namespace

// The loading and preprocessing steps, each a method over the dataset being built.
class DatasetLoader {
 public:
  explicit DatasetLoader(const DatasetOptions& options) {
    ds_.name_ = options.dataset;
    ds_.options_ = options;
  }

  Dataset run() {
    auto start = Clock::now();
    double cpu_start = cpu_seconds();
    load_files();
    ds_.stats_.read_seconds = seconds_since(start);
    ds_.stats_.read_cpu_seconds = cpu_seconds() - cpu_start;
    start = Clock::now();
    cpu_start = cpu_seconds();
    if (opt().benchmark_filename.empty()) {
      filter_missing_ids();
      remove_duplication();
      filter_by_value();
      filter_inter_by_user_or_item();
      filter_by_inter_num();
      filter_knowledge();
    }
    remap_all();
    merge_items_and_entities();
    check_preload_ids(preload_sources_, const_tables());
    prepare_feature_tables();
    fill_nan();
    set_label_by_threshold();
    normalize();
    ds_.preload_ = std::make_shared<const PreloadWeights>(
        build_preload(preload_sources_, const_tables(), rows_from_file()));
    ds_.stats_.preprocess_seconds = seconds_since(start);
    ds_.stats_.preprocess_cpu_seconds = cpu_seconds() - cpu_start;
    return std::move(ds_);
  }

 private:
  const DatasetOptions& opt() const { return ds_.options_; }

  // unused_col.inter names columns kept for filtering but left out of the split written and
  // trained on: the id fields cannot be among them (the split would have no items), and a name
  // that is not a loaded column is a typo, not a no-op.
  void check_unused_columns() const {
    const auto it = opt().unused_col.find("inter");
    if (it == opt().unused_col.end()) return;
    for (const std::string& name : it->second) {
      if (name == opt().uid_field || name == opt().iid_field)
        throw ConfigError("unused_col: inter: \"" + name +
                          "\" is an id field (USER_ID_FIELD / ITEM_ID_FIELD); expected other "
                          "columns");
      if (!ds_.inter_.has(name))
        throw ConfigError("unused_col: inter: no column \"" + name + "\" in " +
                          ds_.inter_.source() +
                          " (loaded: " + join(column_names(ds_.inter_), ", ") + ")");
    }
  }
  std::string file_path(const std::string& suffix) const {
    return (std::filesystem::path(opt().dataset_dir()) / (opt().dataset + "." + suffix)).string();
  }

  // Column selection of one file kind; false when the file is not to be loaded at all.
  bool selection(const std::string& suffix, AtomicFileOptions& fo) {
    fo.field_separator = opt().field_separator;
    fo.seq_separator = opt().seq_separator;
    fo.vocabularies = &vocabularies_;
    if (opt().load_col) {
      auto it = opt().load_col->find(suffix);
      if (it == opt().load_col->end()) return false;
      if (!(it->second.size() == 1 && it->second[0] == "*")) fo.load_col = it->second;
    }
    auto un = opt().unload_col.find(suffix);
    if (un != opt().unload_col.end()) {
      fo.unload_col = un->second;
      if (fo.load_col && !fo.load_col->empty() && !fo.unload_col.empty()) {
        throw ConfigError("load_col and unload_col: both list columns of the ." + suffix +
                          " file; set only one of them");
      }
    }
    return true;
  }

  void require_token_field(const Table& t, const std::string& field, const std::string& why) {
    const int i = t.index_of(field);
    if (i < 0) {
      throw DataError(t.source() + ": column " + field + " (" + why +
                      ") is not loaded; loaded columns: " + join(column_names(t), ", ") +
                      " (check load_col/unload_col and the header)");
    }
    if (t.columns()[static_cast<size_t>(i)].type != FieldType::kToken) {
      throw DataError(t.source() + ":1: column " + field + " (" + why +
                      ") must be of type token, " + "got " +
                      field_type_name(t.columns()[static_cast<size_t>(i)].type));
    }
  }

  void load_files() {
    namespace fs = std::filesystem;
    vocabularies_[opt().uid_field] = std::make_shared<Vocabulary>();
    vocabularies_[opt().iid_field] = std::make_shared<Vocabulary>();
    register_aliases();

    AtomicFileOptions fo;
    if (!selection("inter", fo)) {
      throw ConfigError("load_col: has no \"inter\" entry, but the interactions must be loaded");
    }
    if (opt().benchmark_filename.empty()) {
      const std::string path = file_path("inter");
      if (!fs::is_regular_file(path)) {
        const std::string what =
            "the .inter file of dataset " + opt().dataset + " under data_path " + opt().data_path;
        if (fs::exists(path))
          throw DataError(path + ": is " +
                          (fs::is_directory(path) ? "a directory" : "not a regular file") +
                          ", expected " + what);
        throw DataError(path + ": file not found (" + what + ")");
      }
      ds_.inter_ = read_atomic_file(path, fo);
      ds_.stats_.bytes_read += static_cast<int64_t>(fs::file_size(path));
    } else {
      for (const std::string& part : opt().benchmark_filename) {
        const std::string path = file_path(part + ".inter");
        if (!fs::is_regular_file(path)) {
          throw DataError(path + ": file not found (benchmark_filename part \"" + part + "\")");
        }
        Table t = read_atomic_file(path, fo);
        ds_.stats_.bytes_read += static_cast<int64_t>(fs::file_size(path));
        ds_.benchmark_sizes_.push_back(t.n_rows());
        if (ds_.benchmark_sizes_.size() == 1) {
          ds_.inter_ = std::move(t);
          continue;
        }
        bool same = t.columns().size() == ds_.inter_.columns().size();
        for (const Column& c : t.columns()) {
          same = same && ds_.inter_.has(c.name) && ds_.inter_.column(c.name).type == c.type;
        }
        if (!same) {
          throw DataError(path + ":1: columns " + join(column_headers(t), ", ") +
                          " differ from those of " + ds_.inter_.source() + " (" +
                          join(column_headers(ds_.inter_), ", ") + ")");
        }
        ds_.inter_.append(t);
      }
    }
    require_token_field(ds_.inter_, opt().uid_field, "USER_ID_FIELD");
    require_token_field(ds_.inter_, opt().iid_field, "ITEM_ID_FIELD");
    check_unused_columns();
    ds_.stats_.rows_read = ds_.inter_.n_rows();
    if (ds_.inter_.n_rows() == 0) {
      throw DataError(ds_.inter_.source() + ": no interactions (the file has a header only)");
    }

    for (const auto& [suffix, field, slot] :
         {std::tuple<std::string, std::string, std::optional<Table>*>{"user", opt().uid_field,
                                                                      &ds_.user_},
          {"item", opt().iid_field, &ds_.item_}}) {
      const std::string path = file_path(suffix);
      AtomicFileOptions ffo;
      if (!fs::is_regular_file(path) || !selection(suffix, ffo)) continue;
      Table t = read_atomic_file(path, ffo);
      ds_.stats_.bytes_read += static_cast<int64_t>(fs::file_size(path));
      if (t.columns().empty()) {
        log::warning("no columns loaded from " + path);
        continue;
      }
      require_token_field(t, field,
                          suffix == "user" ? "USER_ID_FIELD, needed when the .user "
                                             "file is loaded"
                                           : "ITEM_ID_FIELD, needed when the .item "
                                             "file is loaded");
      *slot = std::move(t);
    }

    if (opt().knowledge()) {
      kg_.emplace(opt().dataset_dir(), opt().dataset, opt().iid_field, opt().kg,
                  opt().load_col->at("kg"), opt().load_col->at("link"), opt().field_separator);
      ds_.stats_.bytes_read += kg_->bytes_read();
    }
    check_aliases();
    preload_sources_ = resolve_preload(opt().preload_weight, const_tables());

    // RecBole's field order: inter columns, then user, then item (first occurrence wins).
    for (const Table* t : tables()) {
      for (const Column& c : t->columns()) {
        if (std::find(ds_.field_names_.begin(), ds_.field_names_.end(), c.name) ==
            ds_.field_names_.end()) {
          ds_.field_names_.push_back(c.name);
        }
      }
    }
  }

  // The alias groups: key, fields, and the vocabulary their tokens intern into while parsing.
  // User and item aliases share their id field's vocabulary, so that one remap covers them;
  // entity and relation aliases share one vocabulary per group, mapped after the KG merge.
  struct AliasGroup {
    const char* key;
    const std::vector<std::string>* fields;
    std::shared_ptr<Vocabulary> vocab;
  };
  std::vector<AliasGroup> alias_groups() const {
    return {{"alias_of_user_id", &opt().user_aliases, nullptr},
            {"alias_of_item_id", &opt().item_aliases, nullptr},
            {"alias_of_entity_id", &opt().entity_aliases, entity_aliases_},
            {"alias_of_relation_id", &opt().relation_aliases, relation_aliases_}};
  }

  // Each alias field joins one id space: not an id field, a knowledge graph field or a field of
  // another alias list (RecBole asserts the groups are disjoint).
  void register_aliases() {
    const KnowledgeOptions& kg = opt().kg;
    std::vector<std::string> taken{opt().uid_field, opt().iid_field};
    if (opt().knowledge())
      taken.insert(taken.end(), {kg.head_field, kg.tail_field, kg.relation_field});
    for (const std::vector<std::string>* kg_aliases :
         {&opt().entity_aliases, &opt().relation_aliases})
      if (!kg_aliases->empty() && !opt().knowledge())
        throw ConfigError(std::string(kg_aliases == &opt().entity_aliases
                                          ? "alias_of_entity_id"
                                          : "alias_of_relation_id") +
                          ": names fields of the knowledge graph's ids, but no knowledge graph "
                          "is loaded (load_col has no kg entry); expected null, or a knowledge "
                          "model");
    entity_aliases_ = std::make_shared<Vocabulary>();
    relation_aliases_ = std::make_shared<Vocabulary>();
    for (const AliasGroup& g : alias_groups())
      for (const std::string& a : *g.fields) {
        if (std::find(taken.begin(), taken.end(), a) != taken.end())
          throw ConfigError(std::string(g.key) + ": \"" + a +
                            "\" is an id field, a knowledge graph field or already listed in an "
                            "alias list; expected other token fields, each in one alias list");
        taken.push_back(a);
        vocabularies_[a] = g.vocab
                               ? g.vocab
                               : vocabularies_[g.fields == &opt().user_aliases ? opt().uid_field
                                                                               : opt().iid_field];
      }
  }

  // Every alias names a loaded token column of the .inter, .user or .item file.
  void check_aliases() {
    for (const AliasGroup& g : alias_groups())
      for (const std::string& a : *g.fields) {
        const std::string key = g.key;
        bool found = false;
        for (Table* t : tables())
          if (t->has(a)) {
            found = true;
            if (!t->column(a).is_token_like())
              throw ConfigError(key + ": " + t->source() + ": column " + a + " is of type " +
                                field_type_name(t->column(a).type) +
                                "; expected a token or token_seq field");
          }
        if (!found)
          throw ConfigError(key + ": no loaded column \"" + a +
                            "\" in the .inter, .user or .item file (check load_col)");
      }
  }

  // The entity (relation) alias columns, in RecBole's order: fields as listed, each over the
  // .inter, .user and .item tables.
  std::vector<Column*> alias_columns(const std::vector<std::string>& fields) {
    std::vector<Column*> out;
    for (const std::string& a : fields)
      for (Table* t : tables())
        if (t->has(a)) out.push_back(&t->column(a));
    return out;
  }

  // After the merge: entity (relation) alias tokens become the graph's ids. `first` is the
  // first id an alias token may take (entity ids below it are unlinked items, whose "entity"
  // is only their item token), `end` one past the last.
  void remap_kg_alias(const std::vector<std::string>& fields, const char* key,
                      const std::vector<std::string>& tokens, int32_t first, int32_t end) {
    std::vector<Column*> cols = alias_columns(fields);
    if (cols.empty()) return;
    Vocabulary lookup;
    std::vector<int32_t> id_of;
    for (int32_t i = first; i < end; ++i) {
      const int32_t k = lookup.intern(tokens[size_t(i)]);
      if (k == static_cast<int32_t>(id_of.size())) id_of.push_back(i);
    }
    auto vocab = std::make_shared<Vocabulary>();
    for (const std::string& t : tokens) vocab->append(t);
    int64_t unknown = 0;
    std::string example;
    for (Column* c : cols) {
      for (int32_t& v : c->tokens) {
        if (v < 0) {
          v = 0;
          continue;
        }
        const int32_t k = lookup.find(c->vocab->token(v));
        if (k < 0) {
          ++unknown;
          if (example.empty()) example = c->vocab->token(v);
        }
        v = k < 0 ? 0 : id_of[size_t(k)];
      }
      c->vocab = vocab;
    }
    if (unknown > 0)
      log::warning(std::string(key) + ": " + std::to_string(unknown) + " values (e.g. \"" +
                   example + "\") are not in the knowledge graph after " +
                   "its filters; they are set to the padding id 0");
  }

  void remap_kg_aliases() {
    const KnowledgeGraph& g = *ds_.kg_;
    std::vector<std::string> entities, relations;
    for (int32_t i = 0; i < g.n_entities(); ++i) entities.push_back(g.entity_token(i));
    for (int32_t i = 0; i < g.n_relations(); ++i) relations.push_back(g.relation_token(i));
    // Linked items and the KG's own entities; relations of the file (not the reverses, nor
    // [UI-Relation]: RecBole remaps the aliases before adding those).
    const int32_t linked = static_cast<int32_t>(ds_.n_items_ - g.n_linked_items());
    const int32_t n_rel = static_cast<int32_t>(
        opt().kg.reverse_relations ? (g.n_relations() - 2) / 2 + 1 : g.n_relations() - 1);
    remap_kg_alias(opt().entity_aliases, "alias_of_entity_id", entities, linked,
                   static_cast<int32_t>(g.n_entities()));
    remap_kg_alias(opt().relation_aliases, "alias_of_relation_id", relations, 1, n_rel);
  }

  // The knowledge filters, after the generic ones: KG triples by their counts, then the link,
  // then the interactions of items left without a link (RecBole's _filter_link).
  void filter_knowledge() {
    if (!kg_) return;
    kg_->filter_triples();
    std::vector<const Column*> items{&ds_.inter_.column(opt().iid_field)};
    if (ds_.item_) items.push_back(&ds_.item_->column(opt().iid_field));
    const std::vector<uint8_t> linked = kg_->linked_items(items, *vocabularies_[opt().iid_field]);
    const std::vector<int32_t>& ids = ds_.inter_.column(opt().iid_field).tokens;
    std::vector<uint8_t> keep(ids.size());
    int64_t dropped = 0;
    for (size_t r = 0; r < ids.size(); ++r) {
      keep[r] = linked[size_t(ids[r])];
      dropped += keep[r] ? 0 : 1;
    }
    if (dropped > 0) {
      log::info(ds_.inter_.source() + ": " + std::to_string(dropped) +
                " interactions of items without a link to the knowledge graph dropped");
      ds_.inter_.filter(keep);
    }
    check_not_empty("the link filter (interactions of items with no .link entry are dropped)");
  }

  // Items re-ordered (pad, unlinked, linked) and the KG's entities merged into the item ids.
  void merge_items_and_entities() {
    if (!kg_) return;
    const std::shared_ptr<Vocabulary> old = ds_.inter_.column(opt().iid_field).vocab;
    const std::vector<int32_t> order = kg_->item_order(*old);
    std::vector<int32_t> at(order.size());
    for (size_t i = 0; i < order.size(); ++i) at[size_t(order[i])] = static_cast<int32_t>(i);
    auto vocab = std::make_shared<Vocabulary>();
    for (int32_t id : at) vocab->append(old->token(id));
    for (Table* t : tables())
      for (Column& c : t->columns())
        if (c.vocab == old) {
          for (int32_t& v : c.tokens) v = order[size_t(v)];
          c.vocab = vocab;
        }
    ds_.kg_ = kg_->build();
    remap_kg_aliases();
  }

  std::vector<Table*> tables() {
    std::vector<Table*> out{&ds_.inter_};
    if (ds_.user_) out.push_back(&*ds_.user_);
    if (ds_.item_) out.push_back(&*ds_.item_);
    return out;
  }
  std::vector<const Table*> const_tables() {
    std::vector<Table*> t = tables();
    return {t.begin(), t.end()};
  }
  // Per table of tables(): which rows come from the file (null: all of them).
  std::vector<const std::vector<uint8_t>*> rows_from_file() const {
    std::vector<const std::vector<uint8_t>*> out{nullptr};
    if (ds_.user_) out.push_back(&user_rows_from_file_);
    if (ds_.item_) out.push_back(&item_rows_from_file_);
    return out;
  }

  // RecBole raises when a filter leaves a table empty; say which table and which step.
  void check_not_empty(const std::string& step) {
    for (Table* t : tables()) {
      if (t->n_rows() == 0) {
        throw DataError(t->source() + ": no rows left after " + step +
                        "; every row of this file was filtered away (check the filter settings)");
      }
    }
  }

  void filter_missing_ids() {
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
    if (ds_.user_) drop_missing(*ds_.user_, opt().uid_field);
    drop_missing(ds_.inter_, opt().uid_field);
    if (ds_.item_) drop_missing(*ds_.item_, opt().iid_field);
    drop_missing(ds_.inter_, opt().iid_field);
    check_not_empty("dropping rows with a missing user or item id");
  }

  void remove_duplication() {
    const std::string& keep_mode = opt().rm_dup_inter;
    if (keep_mode.empty()) return;
    Table& inter = ds_.inter_;
    const int64_t n = inter.n_rows();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    if (inter.has(opt().time_field) && inter.column(opt().time_field).type == FieldType::kFloat) {
      const std::vector<double>& time = inter.column(opt().time_field).floats;
      // Ascending, NaN last (pandas' na_position="last"); stable where pandas is not.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const double x = time[a], y = time[b];
        if (std::isnan(y)) return !std::isnan(x);
        return x < y;
      });
      log::info("Records in original dataset have been sorted by value of [" + opt().time_field +
                "] in ascending order.");
    } else {
      log::warning("Timestamp field has not been loaded or specified, thus strategy [" + keep_mode +
                   "] of duplication removal may be meaningless.");
    }
    // Group positions of the sorted order by user; within a user, mark the first (or last)
    // occurrence of each item.
    const std::vector<int32_t>& users = inter.column(opt().uid_field).tokens;
    const std::vector<int32_t>& items = inter.column(opt().iid_field).tokens;
    const size_t n_u = static_cast<size_t>(vocabularies_[opt().uid_field]->size());
    const size_t n_i = static_cast<size_t>(vocabularies_[opt().iid_field]->size());
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

  void filter_by_value() {
    for (const ValueFilter& f : opt().val_interval) {
      const std::string key = "val_interval." + f.field;
      bool found = false;
      for (Table* t : tables()) {
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
                        opt().dataset + " (loaded: " + join(ds_.field_names_, ", ") + ")");
      }
      check_not_empty("val_interval " + f.field);
    }
  }

  void filter_inter_by_user_or_item() {
    if (!opt().filter_inter_by_user_or_item) return;
    if (!ds_.user_ && !ds_.item_) return;
    Table& inter = ds_.inter_;
    std::vector<uint8_t> keep(static_cast<size_t>(inter.n_rows()), 1);
    auto restrict_to = [&](const Table& feat, const std::string& field) {
      std::vector<uint8_t> present(static_cast<size_t>(vocabularies_[field]->size()), 0);
      for (int32_t id : feat.column(field).tokens) present[static_cast<size_t>(id)] = 1;
      const std::vector<int32_t>& ids = inter.column(field).tokens;
      for (size_t r = 0; r < keep.size(); ++r) keep[r] &= present[static_cast<size_t>(ids[r])];
    };
    if (ds_.user_) restrict_to(*ds_.user_, opt().uid_field);
    if (ds_.item_) restrict_to(*ds_.item_, opt().iid_field);
    inter.filter(keep);
    check_not_empty("filter_inter_by_user_or_item");
  }

  void filter_by_inter_num() {
    std::optional<IntervalSet> user_iv, item_iv;
    if (!opt().user_inter_num_interval.empty()) {
      user_iv = parse_intervals(opt().user_inter_num_interval, "user_inter_num_interval");
    }
    if (!opt().item_inter_num_interval.empty()) {
      item_iv = parse_intervals(opt().item_inter_num_interval, "item_inter_num_interval");
    }
    if (!user_iv && !item_iv) return;
    for (const auto& [iv, key] : {std::pair{&user_iv, "user_inter_num_interval"},
                                  std::pair{&item_iv, "item_inter_num_interval"}}) {
      if (*iv && (*iv)->intervals.size() > 1) {
        log::warning(std::string(key) + ": more than one interval of interaction number given");
      }
    }
    Table& inter = ds_.inter_;
    const size_t n_u = static_cast<size_t>(vocabularies_[opt().uid_field]->size());
    const size_t n_i = static_cast<size_t>(vocabularies_[opt().iid_field]->size());
    // A side without an interval keeps an empty counter, as RecBole does: nothing is banned there.
    std::vector<int64_t> user_count(user_iv ? n_u : 0, 0), item_count(item_iv ? n_i : 0, 0);
    {
      const std::vector<int32_t>& users = inter.column(opt().uid_field).tokens;
      const std::vector<int32_t>& items = inter.column(opt().iid_field).tokens;
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
      const bool any_user = banned_ids(user_iv, user_count, ds_.user_, opt().uid_field, ban_user);
      const bool any_item = banned_ids(item_iv, item_count, ds_.item_, opt().iid_field, ban_item);
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
      drop_feat(ds_.user_, opt().uid_field, ban_user);
      drop_feat(ds_.item_, opt().iid_field, ban_item);
      const std::vector<int32_t>& users = inter.column(opt().uid_field).tokens;
      const std::vector<int32_t>& items = inter.column(opt().iid_field).tokens;
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
    check_not_empty("user_inter_num_interval / item_inter_num_interval");
  }

  // Remaps the token columns of one id space together, by first appearance in column order.
  std::shared_ptr<Vocabulary> remap_space(const std::vector<Column*>& columns) {
    const Vocabulary& old_vocab = *columns.front()->vocab;
    std::vector<int32_t> mapping(static_cast<size_t>(old_vocab.size()), -1);
    auto vocab = std::make_shared<Vocabulary>();
    vocab->append("[PAD]");
    for (Column* c : columns) {
      for (int32_t& v : c->tokens) {
        if (v < 0) {
          v = 0;  // a missing token becomes the padding id (pandas.factorize's -1, plus one)
          continue;
        }
        int32_t& m = mapping[static_cast<size_t>(v)];
        if (m < 0) m = vocab->append(old_vocab.token(v));
        v = m;
      }
    }
    for (Column* c : columns) c->vocab = vocab;
    return vocab;
  }

  void remap_all() {
    // An id space: the .inter column, the feature file's, then the alias fields in listed order.
    auto space = [&](const std::string& field, std::optional<Table>& feat,
                     const std::vector<std::string>& aliases) {
      std::vector<Column*> cols{&ds_.inter_.column(field)};
      if (feat) cols.push_back(&feat->column(field));
      for (const std::string& a : aliases)
        for (Table* t : tables())
          if (t->has(a)) cols.push_back(&t->column(a));
      return remap_space(cols)->size();
    };
    ds_.n_users_ = space(opt().uid_field, ds_.user_, opt().user_aliases);
    ds_.n_items_ = space(opt().iid_field, ds_.item_, opt().item_aliases);
    // Entity and relation aliases keep their parsing ids until the KG merge maps them.
    auto aliased = [&](const std::string& name) {
      for (const AliasGroup& g : alias_groups())
        if (std::find(g.fields->begin(), g.fields->end(), name) != g.fields->end()) return true;
      return false;
    };
    // Every other token field is its own id space.
    for (Table* t : tables()) {
      for (Column& c : t->columns()) {
        if (!c.is_token_like() || c.name == opt().uid_field || c.name == opt().iid_field ||
            aliased(c.name))
          continue;
        remap_space({&c});
      }
    }
    vocabularies_.clear();
  }

  // Row i of the .user (.item) table describes id i; ids without a row get missing values.
  void prepare_feature_tables() {
    auto reindex = [](Table& t, const std::string& field, int64_t n,
                      std::vector<uint8_t>& from_file) {
      std::vector<int64_t> rows(static_cast<size_t>(n), -1);
      const std::vector<int32_t>& ids = t.column(field).tokens;
      int64_t duplicates = 0;
      for (size_t r = 0; r < ids.size(); ++r) {
        int64_t& slot = rows[static_cast<size_t>(ids[r])];
        if (slot < 0) {
          slot = static_cast<int64_t>(r);
        } else {
          ++duplicates;
        }
      }
      if (duplicates > 0) {
        log::warning(t.source() + ": " + std::to_string(duplicates) + " rows repeat an id; the " +
                     "first row of each id is kept");
      }
      t.take(rows);
      std::vector<int32_t>& out = t.column(field).tokens;
      std::iota(out.begin(), out.end(), 0);
      from_file.resize(rows.size());
      for (size_t i = 0; i < rows.size(); ++i) from_file[i] = rows[i] >= 0;
    };
    if (ds_.user_) reindex(*ds_.user_, opt().uid_field, ds_.n_users_, user_rows_from_file_);
    if (ds_.item_) reindex(*ds_.item_, opt().iid_field, ds_.n_items_, item_rows_from_file_);
  }

  void fill_nan() {
    for (Table* t : tables()) {
      for (Column& c : t->columns()) {
        if (c.type == FieldType::kToken) {
          for (int32_t& v : c.tokens) v = v < 0 ? 0 : v;
        } else if (c.type == FieldType::kFloat) {
          int64_t count = 0;
          std::vector<double> zeroed(c.floats.size());
          for (size_t r = 0; r < c.floats.size(); ++r) {
            const bool missing = std::isnan(c.floats[r]);
            zeroed[r] = missing ? 0. : c.floats[r];
            count += missing ? 0 : 1;
          }
          if (count == static_cast<int64_t>(c.floats.size())) continue;
          const double mean = count > 0 ? numpy_sum(zeroed) / static_cast<double>(count)
                                        : std::numeric_limits<double>::quiet_NaN();
          for (double& v : c.floats) v = std::isnan(v) ? mean : v;
        }
        // Missing sequences are already empty.
      }
    }
  }

  void set_label_by_threshold() {
    if (!opt().threshold) return;
    const auto& [field, value] = *opt().threshold;
    Table& inter = ds_.inter_;
    if (!inter.has(field)) {
      throw DataError("threshold: field " + field + " is not a loaded column of " + inter.source() +
                      " (loaded: " + join(column_names(inter), ", ") + ")");
    }
    if (inter.column(field).type != FieldType::kFloat) {
      throw DataError("threshold: field " + field + " of " + inter.source() + " is " +
                      field_type_name(inter.column(field).type) + ", expected a float field");
    }
    std::vector<double> label(inter.column(field).floats.size());
    const std::vector<double>& src = inter.column(field).floats;
    for (size_t r = 0; r < src.size(); ++r) label[r] = src[r] >= value ? 1.0 : 0.0;
    const std::string& label_field = opt().label_field;
    if (inter.has(label_field)) {
      Column& c = inter.column(label_field);
      c.type = FieldType::kFloat;
      c.tokens.clear();
      c.offsets.clear();
      c.vocab.reset();
      c.floats = std::move(label);
    } else {
      Column c;
      c.name = label_field;
      c.type = FieldType::kFloat;
      c.floats = std::move(label);
      inter.add_column(std::move(c));
      ds_.field_names_.push_back(label_field);
    }
    if (field != label_field) {
      inter.remove_column(field);
      ds_.field_names_.erase(std::find(ds_.field_names_.begin(), ds_.field_names_.end(), field));
    }
  }

  void normalize() {
    std::vector<std::string> fields;
    if (!opt().normalize_field.empty()) {
      if (opt().normalize_all) {
        throw ConfigError("normalize_field and normalize_all: cannot be set at the same time");
      }
      for (const std::string& f : opt().normalize_field) {
        const Column* found = nullptr;
        for (Table* t : tables()) {
          if (t->has(f)) found = &t->column(f);
        }
        if (found == nullptr) {
          throw DataError("normalize_field: field " + f + " is not a loaded column of dataset " +
                          opt().dataset + " (loaded: " + join(ds_.field_names_, ", ") + ")");
        }
        if (!found->is_float_like()) {
          log::warning(f + " is not a FLOAT/FLOAT_SEQ feat, which will not be normalized.");
          continue;
        }
        fields.push_back(f);
      }
    } else if (opt().normalize_all) {
      for (Table* t : tables()) {
        for (const Column& c : t->columns()) {
          if (c.is_float_like()) fields.push_back(c.name);
        }
      }
    } else {
      return;
    }
    for (Table* t : tables()) {
      for (Column& c : t->columns()) {
        if (!c.is_float_like() || std::find(fields.begin(), fields.end(), c.name) == fields.end()) {
          continue;
        }
        if (c.floats.empty()) continue;
        double mn = std::numeric_limits<double>::infinity();
        double mx = -mn;
        for (double v : c.floats) {
          if (std::isnan(v)) continue;
          mn = std::min(mn, v);
          mx = std::max(mx, v);
        }
        if (mx == mn) {
          log::warning("All the same value in [" + c.name + "] from [" + t->source() +
                       "]; it is set to 1.0.");
          for (double& v : c.floats) v = 1.0;
        } else {
          const double range = mx - mn;
          for (double& v : c.floats) v = (v - mn) / range;
        }
      }
    }
  }

  Dataset ds_;
  std::map<std::string, std::shared_ptr<Vocabulary>> vocabularies_;
  std::optional<KnowledgeLoader> kg_;
  // The vocabularies the entity / relation alias fields intern into while parsing.
  std::shared_ptr<Vocabulary> entity_aliases_, relation_aliases_;
  std::vector<PreloadSource> preload_sources_;
  // After prepare_feature_tables: whether row i of the .user / .item table came from the file.
  std::vector<uint8_t> user_rows_from_file_, item_rows_from_file_;
};

Dataset Dataset::load(const DatasetOptions& options) { return DatasetLoader(options).run(); }

const PreloadWeights& Dataset::preload_weights() const {
  static const PreloadWeights kNone;
  return preload_ ? *preload_ : kNone;
}

const std::vector<int32_t>& Dataset::inter_users() const {
  return inter_.column(options_.uid_field).tokens;
}
const std::vector<int32_t>& Dataset::inter_items() const {
  return inter_.column(options_.iid_field).tokens;
}
const std::string& Dataset::user_token(int32_t id) const {
  return inter_.column(options_.uid_field).vocab->token(id);
}
const std::string& Dataset::item_token(int32_t id) const {
  return inter_.column(options_.iid_field).vocab->token(id);
}
int32_t Dataset::user_id(std::string_view token) const {
  return inter_.column(options_.uid_field).vocab->find(token);
}
int32_t Dataset::item_id(std::string_view token) const {
  return inter_.column(options_.iid_field).vocab->find(token);
}

const std::vector<double>& Dataset::inter_floats(std::string_view name) const {
  if (!inter_.has(name) || inter_.column(name).type != FieldType::kFloat) {
    throw DataError(inter_.source() + ": no float column " + std::string(name) +
                    " (loaded: " + join(column_names(inter_), ", ") + ")");
  }
  return inter_.column(name).floats;
}

bool Dataset::is_unused_inter_field(std::string_view name) const {
  auto it = options_.unused_col.find("inter");
  if (it == options_.unused_col.end()) return false;
  return std::find(it->second.begin(), it->second.end(), name) != it->second.end();
}

namespace {
double average_actions(const std::vector<int32_t>& ids, int64_t n_ids) {
  std::vector<uint8_t> present(static_cast<size_t>(n_ids), 0);
  int64_t distinct = 0;
  for (int32_t id : ids) {
    if (!present[static_cast<size_t>(id)]) {
      present[static_cast<size_t>(id)] = 1;
      ++distinct;
    }
  }
  // np.mean of the per-id counts: their (exact) sum over their number.
  return distinct == 0 ? std::numeric_limits<double>::quiet_NaN()
                       : static_cast<double>(ids.size()) / static_cast<double>(distinct);
}
}  // namespace

double Dataset::avg_actions_of_users() const { return average_actions(inter_users(), n_users_); }
double Dataset::avg_actions_of_items() const { return average_actions(inter_items(), n_items_); }

double Dataset::sparsity() const {
  return 1.0 - static_cast<double>(n_inters()) / static_cast<double>(n_users_) /
                   static_cast<double>(n_items_);
}

std::string Dataset::summary() const {
  std::string out = name_ + "\n";
  out += "The number of users: " + std::to_string(n_users_) + "\n";
  out += "Average actions of users: " + python_float_repr(avg_actions_of_users()) + "\n";
  out += "The number of items: " + std::to_string(n_items_) + "\n";
  out += "Average actions of items: " + python_float_repr(avg_actions_of_items()) + "\n";
  out += "The number of inters: " + std::to_string(n_inters()) + "\n";
  out += "The sparsity of the dataset: " + python_float_repr(sparsity() * 100) + "%\n";
  out += "Remain Fields: [";
  for (size_t i = 0; i < field_names_.size(); ++i) {
    out += (i ? ", '" : "'") + field_names_[i] + "'";
  }
  out += "]";
  if (kg_) out += "\n" + kg_->summary();
  return out;
}

}  // namespace recbole::data
