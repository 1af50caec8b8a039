#pragma once
// The page templates of run/report/templates/, compiled into the library (see
// cmake/embed_templates.cmake), so that a report never depends on where the binary runs.
#include <string>
#include <utility>
#include <vector>

namespace recbole::report {

// Every template: {file name ("run.html"), text}, sorted by name.
const std::vector<std::pair<const char*, const char*>>& embedded_templates();

// The text of the template `name`; throws recbole::Error when there is none.
std::string template_text(const std::string& name);

}  // namespace recbole::report
