#!/usr/bin/env bash
# Style checks of the C++ sources, run by CTest (tests "style: ..."), as STYLE.md asks:
#   tools/check_style.sh format             files clang-format (.clang-format) would change
#   tools/check_style.sh naming BUILD_DIR   clang-tidy's identifier naming (.clang-tidy) over
#                                           every source of BUILD_DIR/compile_commands.json
#   tools/check_style.sh fix                applies clang-format to every source
# Exit status 1 with the offending files or names listed; 2 when a tool is missing
# (tools/install_deps.sh installs clang-format and clang-tidy).
set -euo pipefail
cd "$(dirname "$0")/.."

sources() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -co --exclude-standard '*.cpp' '*.h'
  else
    find recbole models trainer tools tests -name '*.cpp' -o -name '*.h'
  fi
}

need() {
  command -v "$1" >/dev/null || { echo "check_style: $1 not found (tools/install_deps.sh installs it)"; exit 2; }
}

case "${1:-}" in
  format)
    need clang-format
    bad=$(sources | xargs -P "$(nproc)" -n 16 clang-format --dry-run -Werror 2>&1 | grep -o '^[^:]*\.\(cpp\|h\)' | sort -u || true)
    if [ -n "$bad" ]; then
      echo "clang-format would change these files (tools/check_style.sh fix formats them):"
      echo "$bad"
      exit 1
    fi
    echo "format: $(sources | wc -l) files clean"
    ;;
  fix)
    need clang-format
    sources | xargs -P "$(nproc)" -n 16 clang-format -i
    ;;
  naming)
    need clang-tidy
    build=${2:?usage: check_style.sh naming BUILD_DIR}
    # clang cannot read GCC's precompiled header: drop it from a copy of the compile commands.
    db=$(mktemp -d)
    trap 'rm -rf "$db"' EXIT
    files=$(python3 - "$build/compile_commands.json" "$db/compile_commands.json" <<'PY'
import json, re, sys
entries, seen, files = [], set(), []
for e in json.load(open(sys.argv[1])):
    f = e['file']
    if '/generated/' in f or f in seen:
        continue
    seen.add(f)
    e['command'] = re.sub(r' -Winvalid-pch| -include \S*cmake_pch\.hxx', '', e['command'])
    entries.append(e)
    files.append(f)
json.dump(entries, open(sys.argv[2], 'w'))
print('\n'.join(files))
PY
)
    out=$(echo "$files" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$db" --quiet 2>&1 || true)
    errors=$(echo "$out" | grep -E 'error: .*\[readability-identifier-naming' | sort -u || true)
    if [ -n "$errors" ]; then
      echo "$errors"
      echo "naming: $(echo "$errors" | wc -l) names do not follow .clang-tidy"
      exit 1
    fi
    if echo "$out" | grep -q 'error:'; then
      echo "$out" | grep 'error:' | head -20
      exit 1
    fi
    echo "naming: $(echo "$files" | wc -l) sources clean"
    ;;
  *)
    echo "usage: tools/check_style.sh format | naming BUILD_DIR | fix"
    exit 2
    ;;
esac
