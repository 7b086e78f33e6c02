#!/usr/bin/env bash
# Build the self-contained bundle: dist/bio-memory-kiosk/ with Python, Qt, OpenVINO, ONNX Runtime, llama.cpp
# and the verified models (plus their cached conversions), so a terminal needs no compiler and no network.
#   bash packaging/build_bundle.sh [DIST_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${1:-dist}
[ -x .venv/bin/pyinstaller ] || .venv/bin/python -m pip install --quiet --disable-pip-version-check "pyinstaller==6.22.3"
.venv/bin/pyinstaller --noconfirm --log-level WARN --distpath "$DIST" --workpath build/pyinstaller packaging/kiosk.spec
# Models: everything the default configuration needs, verified, with conversions already done.
.venv/bin/kiosk models pull >/dev/null
.venv/bin/kiosk models export "$DIST/bio-memory-kiosk/models" >/dev/null
du -sh "$DIST/bio-memory-kiosk"
