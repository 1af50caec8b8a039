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
    find recbole kernels models tasks trainer serving run tools tests -name '*.cpp' -o -name '*.h'
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
    # clang-tidy 22 skips the declarations of system headers (libtorch's) that 14 walks one by one:
    # ~12 s less per libtorch source. Older ones still work, only slower.
    tidy=$(command -v clang-tidy-22 || command -v clang-tidy || true)
    [ -n "$tidy" ] || need clang-tidy
    build=${2:?usage: check_style.sh naming BUILD_DIR}
    db=$(mktemp -d)
    trap 'rm -rf "$db"' EXIT
    # clang cannot read GCC's precompiled header: the copy of the compile commands drops it, and
    # with clang 22 the libtorch sources read a clang one instead, made once here from the flags
    # of the build's own precompiled header (its templates instantiated: ~60% of a source's time),
    # for the sources that the build gives the GCC one.
    pch=""
    if [[ "$tidy" == *-22 ]] && command -v clang++-22 >/dev/null; then pch="$db/torch.pch"; fi
    files=$(python3 - "$build/compile_commands.json" "$db" "$pch" <<'PY'
import json, re, shlex, subprocess, sys
src, db, pch = sys.argv[1], sys.argv[2], sys.argv[3]
gcc_pch = r' -Winvalid-pch| -include \S*cmake_pch\.hxx'
entries, seen, files = [], set(), []
commands = json.load(open(src))
if pch:
    made = [e for e in commands if e['file'].endswith('cmake_pch.hxx.cxx')]
    if made:
        flags = re.sub(gcc_pch + r'| -x c\+\+-header| -o \S+| -c \S+', '', made[0]['command'])
        header = db + '/torch_pch.h'
        open(header, 'w').write('#include <torch/torch.h>\n')
        # libtorch's function bodies are left out of it (-skip-function-bodies): the check never
        # looks at them, and visiting them cost ~2.5 s of every source's ~6 s. Our own bodies,
        # parsed from the sources, are all there; constexpr bodies are never skipped.
        args = ['clang++-22'] + shlex.split(flags)[1:] + [
            '-fpch-instantiate-templates', '-Xclang', '-skip-function-bodies',
            '-x', 'c++-header', header, '-o', pch]
        if subprocess.run(args, stderr=subprocess.DEVNULL).returncode != 0:
            pch = ''
    else:
        pch = ''
# A unity-build source (CMakeLists.txt, tests/CMakeLists.txt) is checked whole: its sources are
# included files there, which .clang-tidy's HeaderFilterRegex covers (.cpp as well as .h). One
# parse for up to 9 sources: 17 s against 96 s for a unity source of 8 models, checked as 8 files.
# A source is listed once, under the first unity source or command that names it.
for e in commands:
    f = e['file']
    unity = re.search(r'/Unity/unity_[0-9]+_cxx\.cxx$', f) is not None
    members = re.findall(r'#include "([^"]+)"', open(f).read()) if unity else [f]
    members = [m for m in members if '/generated/' not in m]  # build outputs are not checked
    if all(m in seen for m in members):
        continue
    seen.update(members)
    uses_gcc_pch = re.search(gcc_pch, e['command']) is not None
    e['command'] = re.sub(gcc_pch, '', e['command'])
    if pch and uses_gcc_pch and not f.endswith('.hxx.cxx'):
        e['command'] = e['command'].replace(' -c ', ' -include-pch ' + pch + ' -c ', 1)
    entries.append(e)
    files.append(f)
json.dump(entries, open(db + '/compile_commands.json', 'w'))
open(db + '/n_sources', 'w').write(str(len(seen)))
print('\n'.join(files))
PY
)
    # A header is checked only where .clang-tidy's HeaderFilterRegex names its folder: a new top
    # folder left out of it would go unchecked without a word.
    filter=$(sed -n "s/^HeaderFilterRegex: *'\(.*\)'\$/\1/p" .clang-tidy)
    [ -n "$filter" ] || { echo "naming: .clang-tidy has no HeaderFilterRegex"; exit 1; }
    uncovered=$(sources | sed "s|^|$PWD/|" | grep -Ev "$filter" || true)
    if [ -n "$uncovered" ]; then
      echo "naming: .clang-tidy's HeaderFilterRegex leaves out these sources (add their folder):"
      echo "$uncovered"
      exit 1
    fi
    out=$(echo "$files" | xargs -P "$(nproc)" -n 1 "$tidy" -p "$db" --quiet 2>&1 || true)
    errors=$(echo "$out" | grep -E 'error: .*\[readability-identifier-naming' | sort -u || true)
    if [ -n "$errors" ]; then
      echo "$errors"
      echo "naming: $(echo "$errors" | wc -l) names do not follow .clang-tidy"
      exit 1
    fi
    if grep -q 'error:' <<<"$out"; then
      echo "$out" | grep 'error:' | head -20
      exit 1
    fi
    echo "naming: $(cat "$db/n_sources") sources clean ($(echo "$files" | wc -l) compiled files)"
    ;;
  *)
    echo "usage: tools/check_style.sh format | naming BUILD_DIR | fix"
    exit 2
    ;;
esac
