#!/usr/bin/env bash
# Install or update Bio-Memory Kiosk on a dedicated terminal from a self-contained bundle (packaging/build_bundle.sh).
# Needs no compiler and no network: the bundle carries Python, Qt, OpenVINO/ONNX Runtime, llama.cpp and the
# verified models. The bundle ships this script in its packaging/ folder, so on the terminal:
#   sudo bio-memory-kiosk/packaging/install.sh                 # kiosk: full-screen at boot
#   sudo bio-memory-kiosk/packaging/install.sh --desktop-only  # family desktop: menu entry only
# (from a source checkout: sudo packaging/install.sh dist/bio-memory-kiosk [--desktop-only])
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -x "$HERE/../kiosk" ] && [ "${1:-}" != "" ] && [ "${1#--}" != "$1" ]; then
  BUNDLE="$HERE/.."; MODE=$1                       # run from inside a bundle with only a mode
elif [ -x "$HERE/../kiosk" ] && [ $# -eq 0 ]; then
  BUNDLE="$HERE/.."; MODE=""
else
  BUNDLE=${1:?usage: install.sh [BUNDLE_DIR] [--desktop-only]}; MODE=${2:-}
fi
BUNDLE=$(cd "$BUNDLE" && pwd)
PREFIX=/opt/bio-memory-kiosk
STATE=/var/lib/bio-memory-kiosk
CONF=/etc/bio-memory-kiosk
SERVICE=bio-memory-kiosk.service

[ "$(id -u)" = 0 ] || { echo "install.sh: run as root" >&2; exit 1; }
[ -x "$BUNDLE/kiosk" ] || { echo "install.sh: $BUNDLE has no kiosk executable" >&2; exit 1; }
[ -d "$BUNDLE/models" ] || { echo "install.sh: $BUNDLE has no models/ (build it with build_bundle.sh)" >&2; exit 1; }

id kiosk >/dev/null 2>&1 || useradd --system --create-home --home-dir "$STATE" --groups video,audio,input kiosk
install -d -o kiosk -g kiosk "$STATE" "$STATE/logs" "$STATE/backups" "$STATE/calibration"
install -d "$PREFIX/bin" "$PREFIX/share" "$CONF"

# An update: stop the app so the memory DB is closed (its WAL folded in), and keep a plain copy of it. The new
# build migrates the schema forward on first open, after writing its own backup next to the DB.
was_running=no
if systemctl is-active --quiet "$SERVICE" 2>/dev/null; then
  was_running=yes
  systemctl stop "$SERVICE"
fi
if [ -f "$STATE/memory.db" ]; then
  stamp=$(date +%Y%m%d-%H%M%S)
  for file in "$STATE"/memory.db "$STATE"/memory.db-wal "$STATE"/memory.db-shm; do
    [ -f "$file" ] && cp -a "$file" "$STATE/backups/$(basename "$file").pre-update-$stamp"
  done
  echo "install.sh: memory DB backed up to $STATE/backups/memory.db.pre-update-$stamp"
fi

# Swap the app in one move, keeping the previous build until the new one is in place. The models stay inside
# the app folder (the bundle's entry point uses them by default), so code and models are updated together.
rm -rf "$PREFIX/app.new" && cp -a "$BUNDLE" "$PREFIX/app.new"
[ -d "$PREFIX/app" ] && mv "$PREFIX/app" "$PREFIX/app.old"
mv "$PREFIX/app.new" "$PREFIX/app" && rm -rf "$PREFIX/app.old"
ln -sf "$PREFIX/app/kiosk" "$PREFIX/bin/kiosk"
[ -f "$CONF/kiosk.toml" ] || install -m 0644 "$HERE/kiosk.toml" "$CONF/kiosk.toml"
# Shipped calibrations seed the writable calibration dir; one the admin made (or an earlier install put) stays.
for file in "$PREFIX/app/_internal/calibration/"*; do
  [ -f "$file" ] && [ ! -e "$STATE/calibration/$(basename "$file")" ] && install -o kiosk -g kiosk -m 0644 "$file" "$STATE/calibration/"
done

install -m 0755 "$HERE/systemd/kiosk-session.sh" "$PREFIX/share/kiosk-session.sh"
install -m 0644 "$HERE/desktop/bio-memory-kiosk.desktop" /usr/share/applications/bio-memory-kiosk.desktop
install -m 0644 "$HERE/logrotate/bio-memory-kiosk" /etc/logrotate.d/bio-memory-kiosk

as_kiosk() { sudo -u kiosk KIOSK_HOME="$STATE" KIOSK_CONFIG="$CONF/kiosk.toml" "$PREFIX/bin/kiosk" "$@"; }
# Opening the store creates the DB on a new install and migrates it (backup first) on an update.
as_kiosk users list >/dev/null
as_kiosk doctor || echo "install.sh: fix what the doctor reports above, then run: sudo -u kiosk $PREFIX/bin/kiosk doctor"

if [ "$MODE" != "--desktop-only" ]; then
  install -m 0644 "$HERE/systemd/$SERVICE" "/etc/systemd/system/$SERVICE"
  systemctl daemon-reload && systemctl enable "$SERVICE"
  if [ "$was_running" = yes ]; then
    systemctl start "$SERVICE" && echo "install.sh: updated and restarted"
  else
    echo "install.sh: installed; start now with: systemctl start $SERVICE (it also starts at boot)"
  fi
fi
