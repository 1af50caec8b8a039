#include "recbole/data/dataset_loader.h"

#include <ctime>
#include <memory>
#include <utility>

#include "recbole/data/dataset_files.h"
#include "recbole/data/dataset_tables.h"
#include "recbole/data/id_aliases.h"
#include "recbole/data/id_remap.h"
#include "recbole/data/knowledge_link.h"
#include "recbole/data/preload_weight.h"
#include "recbole/data/row_filters.h"
#include "recbole/data/value_transforms.h"
#include "recbole/utils/clock.h"

namespace recbole::data {

namespace {

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

}  // namespace

Dataset DatasetLoader::load(const DatasetOptions& options) {
  Dataset ds;
  ds.name_ = options.dataset;
  ds.options_ = options;
  const DatasetOptions& opt = ds.options_;

  auto start = Clock::now();
  double cpu_start = cpu_seconds();
  Vocabularies vocabularies;
  vocabularies[opt.uid_field] = std::make_shared<Vocabulary>();
  vocabularies[opt.iid_field] = std::make_shared<Vocabulary>();
  const IdAliases aliases(opt, vocabularies);
  DatasetFiles files = read_dataset_files(opt, vocabularies);
  DatasetTables& tables = files.tables;
  ds.benchmark_sizes_ = std::move(files.benchmark_sizes);
  ds.stats_.bytes_read = files.bytes_read;
  ds.stats_.rows_read = files.rows_read;
  aliases.check_columns(tables);
  const std::vector<PreloadSource> preload_sources =
      resolve_preload(opt.preload_weight, std::as_const(tables).all());
  ds.field_names_ = field_names_of(tables);
  ds.stats_.read_seconds = seconds_since(start);
  ds.stats_.read_cpu_seconds = cpu_seconds() - cpu_start;

  start = Clock::now();
  cpu_start = cpu_seconds();
  if (opt.benchmark_filename.empty()) {
    filter_missing_ids(tables, opt);
    remove_duplication(tables, opt, vocabularies);
    filter_by_value(tables, opt, ds.field_names_);
    filter_inter_by_user_or_item(tables, opt, vocabularies);
    filter_by_inter_num(tables, opt, vocabularies);
    if (files.knowledge)
      filter_knowledge(tables, *files.knowledge, opt, *vocabularies.at(opt.iid_field));
  }
  const IdCounts ids = remap_token_fields(tables, opt, aliases);
  ds.n_users_ = ids.n_users;
  ds.n_items_ = ids.n_items;
  vocabularies.clear();  // the columns hold the remapped vocabularies now
  if (files.knowledge) {
    ds.kg_ = merge_items_and_entities(tables, *files.knowledge, opt);
    aliases.remap_into_knowledge_graph(tables, *ds.kg_, ds.n_items_);
  }
  check_preload_ids(preload_sources, std::as_const(tables).all());
  const FeatureRowsFromFile rows_from_file = reindex_feature_tables(tables, opt, ids);
  fill_nan(tables);
  set_label_by_threshold(tables, opt, ds.field_names_);
  normalize(tables, opt, ds.field_names_);
  ds.preload_ = std::make_shared<const PreloadWeights>(build_preload(
      preload_sources, std::as_const(tables).all(), rows_from_file.per_table(tables)));
  ds.inter_ = std::move(tables.inter);
  ds.user_ = std::move(tables.user);
  ds.item_ = std::move(tables.item);
  ds.stats_.preprocess_seconds = seconds_since(start);
  ds.stats_.preprocess_cpu_seconds = cpu_seconds() - cpu_start;
  return ds;
}

}  // namespace recbole::data
