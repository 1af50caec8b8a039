#pragma once
// Counting the documents of a YAML text without YAML::LoadAll.
//
// yaml-cpp 0.7's parser never consumes a flow indicator out of place at the start of a document
// (a text starting with "," such as ", 1]"): each HandleNextDocument call yields the same empty
// document again, so YAML::LoadAll never returns and its vector of documents grows without
// bound (found by the config fuzzer, tests/fuzz/regressions/config/). YAML::Load reads such a
// text as an empty document.
#include <cstddef>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace recbole::config {

// Where the documents of `text` start, at most `limit` + 1 of them (so a caller expecting
// `limit` documents learns that there are more). A document that starts where the previous one
// did is the loop above: a YAML::ParserException at that place, like any other syntax error.
std::vector<YAML::Mark> yaml_document_starts(const std::string& text, size_t limit);

}  // namespace recbole::config
