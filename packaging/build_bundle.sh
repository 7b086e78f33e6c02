#!/usr/bin/env bash
# Build the self-contained bundle: DIST_DIR/bio-memory-kiosk/ with Python, Qt, OpenVINO, ONNX Runtime, llama.cpp
# and the verified models (plus their cached conversions), so a terminal needs no compiler and no network.
#   bash packaging/build_bundle.sh [DIST_DIR]
# PyInstaller's work dir (BUNDLE_WORKPATH, default build/pyinstaller) is kept between builds, but measured here a
# rebuild re-analyses and takes as long as a build from scratch (bench/results/bundle.md). A lock on it lets
# concurrent builds (a test and a developer) take turns instead of corrupting each other's files.
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${1:-dist}
WORKPATH=${BUNDLE_WORKPATH:-build/pyinstaller}
# A bundle goes to terminals whose CPU nobody checked: it carries the portable llama.cpp build only.
LLAMA_FEATURES=$(.venv/bin/python -c \
  "from kiosk.llm.cpu_support import built_for, probe_llama_build; print(' '.join(built_for(probe_llama_build())))")
case " $LLAMA_FEATURES " in
  *" AVX512 "*)
    echo "build_bundle: .venv has an AVX-512 llama.cpp build; run LLAMA_BUILD=portable bash packaging/bootstrap.sh" >&2
    exit 2 ;;
esac
[ -x .venv/bin/pyinstaller ] || .venv/bin/python -m pip install --quiet --disable-pip-version-check "pyinstaller==6.22.3"

mkdir -p "$WORKPATH"
exec 9>"$WORKPATH.lock"
flock 9
started=$SECONDS
.venv/bin/pyinstaller --noconfirm --log-level WARN --distpath "$DIST" --workpath "$WORKPATH" packaging/kiosk.spec
echo "build_bundle: pyinstaller $((SECONDS - started)) s"
flock -u 9

# Models: everything the default configuration needs, verified, with conversions already done.
started=$SECONDS
.venv/bin/kiosk models pull >/dev/null
.venv/bin/kiosk models export "$DIST/bio-memory-kiosk/models" >/dev/null
echo "build_bundle: models $((SECONDS - started)) s"

# The install files travel with the bundle: on the terminal, `sudo bio-memory-kiosk/packaging/install.sh`.
APP="$DIST/bio-memory-kiosk"
rm -rf "$APP/packaging" && mkdir -p "$APP/packaging"
cp -a packaging/install.sh packaging/kiosk.toml packaging/README.md packaging/systemd packaging/desktop \
  packaging/logrotate "$APP/packaging/"
du -sh "$APP"
