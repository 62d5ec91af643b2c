// Reading the CLI's input: one text per line from a file or stdin ("-"), with UTF-8 validation
// and empty-line handling. Every line the user gave is accounted for (kept or reported).
#pragma once

#include <string>
#include <vector>

namespace embed::cli {

struct InputLines {
  std::vector<std::string> texts;   // kept lines, in order
  std::vector<size_t> line_numbers; // 1-based line number of each kept text
  std::vector<size_t> skipped;      // 1-based numbers of skipped empty lines
};

// Throws embed::Error: Io when the file cannot be read; InvalidArgument for an invalid UTF-8
// line (naming the line and byte column) or an empty line when skip_empty is false.
InputLines read_lines(const std::string& path, bool skip_empty);

// Position of the first byte that breaks UTF-8 validity, or npos.
size_t find_invalid_utf8(const std::string& s);

}  // namespace embed::cli
