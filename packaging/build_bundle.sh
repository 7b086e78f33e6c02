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
[ -x .venv/bin/pyinstaller ] || .venv/bin/python -m pip install --quiet --disable-pip-version-check "pyinstaller==6.22.3"

mkdir -p "$WORKPATH"
exec 9>"$WORKPATH.lock"
flock 9
# A bundle goes to terminals whose CPU nobody checked: it carries the portable llama.cpp build only. When .venv
# has the AVX-512 build (the bootstrap's choice on such CPUs), the portable wheel is unpacked next to the work dir
# and put first on the path PyInstaller collects from.
. packaging/llama_build.sh
llama_features() {
  .venv/bin/python -c \
    "from kiosk.llm.cpu_support import built_for, probe_llama_build; print(' '.join(built_for(probe_llama_build())))"
}
case " $(llama_features) " in
  *" AVX512 "*)
    PORTABLE_SITE="$WORKPATH-llama-portable"
    PORTABLE_WHEEL=$(llama_wheel portable)
    if [ "$(cat "$PORTABLE_SITE/.wheel" 2>/dev/null)" != "$PORTABLE_WHEEL" ]; then
      rm -rf "$PORTABLE_SITE"
      .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --target "$PORTABLE_SITE" \
        "$PORTABLE_WHEEL"
      echo "$PORTABLE_WHEEL" > "$PORTABLE_SITE/.wheel"
    fi
    export PYTHONPATH="$PORTABLE_SITE${PYTHONPATH:+:$PYTHONPATH}"
    case " $(llama_features) " in
      *" AVX512 "*) echo "build_bundle: the portable llama.cpp build in $PORTABLE_SITE is not portable" >&2; exit 2 ;;
    esac
    echo "build_bundle: bundling the portable llama.cpp build ($PORTABLE_WHEEL)" ;;
esac
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
