#pragma once
// A small process-wide logger: one console sink (stderr) and an optional file sink, one level.
// RecBole's layout: "<timestamp> <LEVEL>  <message>" in the file, a short form on the console.
// Ranks other than 0 of a distributed run log errors only (see Dist).
#include <string>

namespace recbole::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kCritical = 4 };

// Parses "DEBUG", "info", ... (case-insensitive); anything unknown is kInfo, as in RecBole.
Level parse_level(const std::string& name);

void set_level(Level level);
Level level();

// Also write every message at or above the level to `path` (created with its folders).
// An empty path closes the file sink.
void set_file(const std::string& path);

void write(Level level, const std::string& message);
inline void debug(const std::string& m) { write(Level::kDebug, m); }
inline void info(const std::string& m) { write(Level::kInfo, m); }
inline void warning(const std::string& m) { write(Level::kWarning, m); }
inline void error(const std::string& m) { write(Level::kError, m); }

}  // namespace recbole::log
