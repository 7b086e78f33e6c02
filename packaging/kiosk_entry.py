"""Entry point of the self-contained bundle: the same CLI, with the bundled models as the default."""

import os
import sys
from pathlib import Path

bundle_models = Path(sys.executable).resolve().parent / "models"
if getattr(sys, "frozen", False) and bundle_models.is_dir():
    os.environ.setdefault("KIOSK_PATHS__MODELS_DIR", str(bundle_models))

from kiosk.cli import main  # noqa: E402

main()
