#include "recbole/config/yaml_documents.h"

#include <sstream>

#include <yaml-cpp/eventhandler.h>

namespace recbole::config {

namespace {

// Records where each document starts; the document's content is not needed.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

std::vector<YAML::Mark> yaml_document_starts(const std::string& text, size_t limit) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts handler;
  while (handler.starts.size() <= limit && parser.HandleNextDocument(handler)) {
    const size_t n = handler.starts.size();
    if (n >= 2 && handler.starts[n - 1].pos == handler.starts[n - 2].pos) {
      const YAML::Mark at = handler.starts[n - 1];
      const char found = at.pos >= 0 && static_cast<size_t>(at.pos) < text.size()
                             ? text[static_cast<size_t>(at.pos)]
                             : '?';
      throw YAML::ParserException(
          at, std::string("unexpected '") + found + "' (a flow indicator outside [...] or {...})");
    }
  }
  return handler.starts;
}

}  // namespace recbole::config
