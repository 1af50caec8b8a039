#pragma once
// Text helpers of the experiment tools' outputs: the tables printed to the log, CSV rows, numbers
// and shell commands.
#include <string>
#include <vector>

namespace recbole::experiment {

// `x` with `decimals` digits after the point ("0.4123").
std::string fixed(double x, int decimals);

// `x` in its shortest form that reads back exactly ("0.001", "64").
std::string number_text(double x);

// One CSV line (RFC 4180: fields with a comma, quote or line break are quoted), "\n"-ended.
std::string csv_row(const std::vector<std::string>& fields);

// `arg` as one word for a POSIX shell (single-quoted when it holds anything but
// [A-Za-z0-9_@%+=:,./-]).
std::string shell_quote(const std::string& arg);

// A plain text table: the header, a rule, then the rows, columns padded to their widest cell
// (text left-aligned, numbers right-aligned).
std::string text_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows);

}  // namespace recbole::experiment
