// recbole_report --input=result.json|trials.json|compare.json [--output=report.html]
// Renders the HTML report of a saved run result (recbole_run --result_file), search
// (recbole_hyper's trials.json) or comparison (recbole_compare's compare.json); the kind is told
// by the document's fields, or by --kind. Exit status is non-zero on any error, with the message
// on stderr.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "recbole/utils/atomic_write.h"
#include "recbole/utils/error.h"
#include "run/report/html_report.h"
#include "tool_flags.h"

namespace {

constexpr const char* kUsage =
    "usage: recbole_report --input=FILE.json [--output=FILE.html] [--kind=run|search|compare]\n"
    "\n"
    "Renders a self-contained HTML report (inline SVG charts, no scripts, no network) of\n"
    "  a run          recbole_run --result_file=FILE.json (also written by --report=FILE.html)\n"
    "  a search       recbole_hyper's trials.json\n"
    "  a comparison   recbole_compare's compare.json\n"
    "\n"
    "  --input=FILE    the JSON document\n"
    "  --output=FILE   the HTML file to write (default: the input's path with .html)\n"
    "  --kind=K        run, search or compare (default: told by the document's fields)\n"
    "  --version       print the version\n";

// A search has trials, a comparison models and seeds, a run a model and its results.
std::string detect_kind(const nlohmann::json& doc, const std::string& path) {
  if (!doc.is_object())
    throw recbole::Error(path + ": expected a JSON object, got " + std::string(doc.type_name()));
  if (doc.contains("trials")) return "search";
  if (doc.contains("models") && doc.contains("seeds")) return "compare";
  if (doc.contains("model") && (doc.contains("history") || doc.contains("test_result")))
    return "run";
  throw recbole::Error(path +
                       ": cannot tell the kind of report: expected \"trials\" (a search), "
                       "\"models\" and \"seeds\" (a comparison) or \"model\" with \"history\" or "
                       "\"test_result\" (a run); or give --kind");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (recbole::tools::answer_help_or_version(argc, argv, "recbole_report", kUsage)) return 0;
    std::string input, output, kind;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      auto value = [&](const char* name) -> const char* {
        const size_t n = std::strlen(name);
        return arg.compare(0, n, name) == 0 ? argv[i] + n : nullptr;
      };
      if (const char* v = value("--input="))
        input = v;
      else if (const char* v = value("--output="))
        output = v;
      else if (const char* v = value("--kind="))
        kind = v;
      else
        throw recbole::Error("unknown argument \"" + arg + "\"; see --help");
    }
    if (input.empty())
      throw recbole::Error("--input: expected the path of a JSON file; see --help");
    if (output.empty()) output = std::filesystem::path(input).replace_extension(".html").string();
    if (output == input) throw recbole::Error("--output: the same file as --input (" + input + ")");

    std::ifstream in(input);
    if (!in) throw recbole::Error(input + ": cannot open: " + std::strerror(errno));
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
      throw recbole::Error(input + ": not valid JSON: " + e.what());
    }
    if (kind.empty()) kind = detect_kind(doc, input);
    std::string html;
    if (kind == "run")
      html = recbole::report::render_run_report(doc);
    else if (kind == "search")
      html = recbole::report::render_search_report(doc);
    else if (kind == "compare")
      html = recbole::report::render_compare_report(doc);
    else
      throw recbole::Error("--kind: expected run, search or compare, got \"" + kind + "\"");
    recbole::write_file_atomically(output, html, "the report");
    std::cout << "wrote the " << kind << " report " << output << "\n";
    return 0;
  } catch (const recbole::Error& e) {
    std::cerr << "recbole_report: error: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "recbole_report: internal error: " << e.what() << "\n";
  }
  return 1;
}
