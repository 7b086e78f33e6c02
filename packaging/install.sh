#!/usr/bin/env bash
# Install Bio-Memory Kiosk on a dedicated terminal from a self-contained bundle (see packaging/build_bundle.sh).
# Needs no compiler and no network: the bundle carries Python, Qt, OpenVINO/ONNX Runtime, llama.cpp and the
# verified models.
#   sudo packaging/install.sh dist/bio-memory-kiosk          # kiosk: full-screen at boot
#   sudo packaging/install.sh dist/bio-memory-kiosk --desktop-only
set -euo pipefail
BUNDLE=${1:?usage: install.sh BUNDLE_DIR [--desktop-only]}
MODE=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
PREFIX=/opt/bio-memory-kiosk
STATE=/var/lib/bio-memory-kiosk
CONF=/etc/bio-memory-kiosk

[ "$(id -u)" = 0 ] || { echo "install.sh: run as root" >&2; exit 1; }
[ -x "$BUNDLE/kiosk" ] || { echo "install.sh: $BUNDLE has no kiosk executable" >&2; exit 1; }

id kiosk >/dev/null 2>&1 || useradd --system --create-home --home-dir "$STATE" --groups video,audio,input kiosk
install -d -o kiosk -g kiosk "$STATE" "$STATE/logs"
install -d "$PREFIX/bin" "$PREFIX/share" "$CONF"

# Keep the previous build until the new one is in place; the memory DB lives in $STATE and is never touched here
# (a newer build migrates it forward at start, after writing a backup next to it).
rm -rf "$PREFIX/app.new" && cp -a "$BUNDLE" "$PREFIX/app.new"
[ -d "$PREFIX/app" ] && mv "$PREFIX/app" "$PREFIX/app.old"
mv "$PREFIX/app.new" "$PREFIX/app" && rm -rf "$PREFIX/app.old"
ln -sf "$PREFIX/app/kiosk" "$PREFIX/bin/kiosk"

if [ -d "$BUNDLE/models" ]; then
  install -d -o kiosk -g kiosk "$STATE/models"
  cp -a "$BUNDLE/models/." "$STATE/models/" && chown -R kiosk:kiosk "$STATE/models"
fi
[ -f "$CONF/kiosk.toml" ] || install -m 0644 "$HERE/kiosk.toml" "$CONF/kiosk.toml"

install -m 0755 "$HERE/systemd/kiosk-session.sh" "$PREFIX/share/kiosk-session.sh"
install -m 0644 "$HERE/desktop/bio-memory-kiosk.desktop" /usr/share/applications/bio-memory-kiosk.desktop
install -m 0644 "$HERE/logrotate/bio-memory-kiosk" /etc/logrotate.d/bio-memory-kiosk
if [ "$MODE" != "--desktop-only" ]; then
  install -m 0644 "$HERE/systemd/bio-memory-kiosk.service" /etc/systemd/system/bio-memory-kiosk.service
  systemctl daemon-reload && systemctl enable bio-memory-kiosk.service
  echo "installed; start now with: systemctl start bio-memory-kiosk"
fi
sudo -u kiosk KIOSK_HOME="$STATE" KIOSK_CONFIG="$CONF/kiosk.toml" "$PREFIX/bin/kiosk" doctor || true
