#!/bin/sh
# Start the kiosk app under cage (Wayland kiosk compositor) when installed, else under a bare X server.
set -eu
APP=/opt/bio-memory-kiosk/bin/kiosk
if command -v cage >/dev/null 2>&1; then
  exec cage -s -- "$APP"
fi
exec xinit "$APP" -- :0 -nolisten tcp -nocursor vt1
