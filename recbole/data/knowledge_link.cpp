#include "recbole/data/knowledge_link.h"

#include <memory>
#include <string>
#include <vector>

#include "recbole/utils/logging.h"

namespace recbole::data {

void filter_knowledge(DatasetTables& tables, KnowledgeLoader& knowledge, const DatasetOptions& opt,
                      const Vocabulary& item_vocab) {
  knowledge.filter_triples();
  std::vector<const Column*> items{&tables.inter.column(opt.iid_field)};
  if (tables.item) items.push_back(&tables.item->column(opt.iid_field));
  const std::vector<uint8_t> linked = knowledge.linked_items(items, item_vocab);
  const std::vector<int32_t>& ids = tables.inter.column(opt.iid_field).tokens;
  std::vector<uint8_t> keep(ids.size());
  int64_t dropped = 0;
  for (size_t r = 0; r < ids.size(); ++r) {
    keep[r] = linked[size_t(ids[r])];
    dropped += keep[r] ? 0 : 1;
  }
  if (dropped > 0) {
    log::info(tables.inter.source() + ": " + std::to_string(dropped) +
              " interactions of items without a link to the knowledge graph dropped");
    tables.inter.filter(keep);
  }
  tables.check_not_empty("the link filter (interactions of items with no .link entry are dropped)");
}

KnowledgeGraph merge_items_and_entities(DatasetTables& tables, KnowledgeLoader& knowledge,
                                        const DatasetOptions& opt) {
  const std::shared_ptr<Vocabulary> old = tables.inter.column(opt.iid_field).vocab;
  const std::vector<int32_t> order = knowledge.item_order(*old);
  std::vector<int32_t> at(order.size());
  for (size_t i = 0; i < order.size(); ++i) at[size_t(order[i])] = static_cast<int32_t>(i);
  auto vocab = std::make_shared<Vocabulary>();
  for (int32_t id : at) vocab->append(old->token(id));
  for (Table* t : tables.all())
    for (Column& c : t->columns())
      if (c.vocab == old) {
        for (int32_t& v : c.tokens) v = order[size_t(v)];
        c.vocab = vocab;
      }
  return knowledge.build();
}

}  // namespace recbole::data
