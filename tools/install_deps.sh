#!/usr/bin/env bash
# Installs the Debian (bookworm) packages recbole-cpp needs to build, test and run.
# Idempotent: packages already present are left alone; safe to re-run.
#   --browser   also Chromium (~300 MB), for the test that loads the HTML reports in a browser
#               ("report:browser", skipped without it; CI installs it)
set -euo pipefail

browser=0
for arg in "$@"; do
  case "$arg" in
    --browser) browser=1 ;;
    *) echo "usage: tools/install_deps.sh [--browser]" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev libgloo-dev
  libyaml-cpp-dev libeigen3-dev catch2
  libcurl4-openssl-dev libarchive-dev zlib1g-dev libspdlog-dev libfmt-dev
  nlohmann-json3-dev libcli11-dev libbenchmark-dev
  libkainjow-mustache-dev  # the HTML reports' templates (run/report/), header-only
  libopenblas-dev libopenblas0-pthread
  python3 zip
  clang-format clang-tidy
  clang libclang-rt-14-dev  # the fuzz targets (tests/fuzz/, docs/testing.md): libFuzzer
  iproute2  # the multi-host tests (tests/distributed/test_multihost.cpp) make network namespaces
  libcpp-httplib-dev  # recbole_serve's HTTP server (tools/recbole_serve.cpp); optional in CMake
  libfaiss-dev  # the approximate item index of serving (serving/item_index.h)
  libxsmm-dev  # the GRU's per-step products (kernels/jit_gemm.h); optional in CMake
  wrk  # the serving load benchmark (tools/bench_serve.sh, docs/benchmarks.md)
)

# Installed where the archive has them: clang-tidy 22 and its clang (a PCH) run the naming check
# (tools/check_style.sh) in a third of clang-tidy 14's time; without them it uses clang-tidy.
optional=(clang-tidy-22 clang-22)

if [ "$browser" -eq 1 ]; then
  packages+=(chromium fonts-dejavu-core)  # headless Chromium and the reports' font
fi

# The tools' output is read whole before grep looks at it: under pipefail, `tool | grep -q`
# fails whenever grep exits at its match while the tool is still writing (SIGPIPE, status 141).
installed() { [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == *"install ok installed"* ]]; }

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing_optional=()
for p in "${optional[@]}"; do
  installed "$p" || missing_optional+=("$p")
done

if [ "${#missing[@]}" -gt 0 ] || [ "${#missing_optional[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq
  for p in "${missing_optional[@]}"; do
    if grep -q 'Candidate: [0-9]' <<<"$(apt-cache policy "$p" 2>/dev/null || true)"; then
      missing+=("$p")
    else
      echo "install_deps: $p is not in this system's archive (optional: left out)"
    fi
  done
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install_deps: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install_deps: all packages present"
fi

# Debian's libtorch calls whatever libblas.so.3 points to; the reference BLAS is ~20x slower
# than OpenBLAS for matrix products, so point the alternative at OpenBLAS when it is there.
for lib in libblas.so.3 liblapack.so.3; do
  alt="${lib}-$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
  target=$(update-alternatives --list "$alt" 2>/dev/null | grep -m1 openblas-pthread || true)
  if [ -n "$target" ]; then
    $SUDO update-alternatives --set "$alt" "$target" >/dev/null
  fi
done
echo "install_deps: BLAS -> $(readlink -f /usr/lib/*/libblas.so.3 | head -1)"
