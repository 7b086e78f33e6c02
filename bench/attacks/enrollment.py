"""Issue #34, points 2 and 8 (names): enrollment poisoning and bad names, re-run through the real `kiosk` command.

Colin Powell and Tony Blair are enrolled from four LFW3D images each (crops enlarged on a plain canvas so the
detector sees them whole). Then, each a `kiosk` subprocess with the same KIOSK_HOME: "Mallory" from four images
each holding Colin and Tony side by side (`--min-samples 2`); Mallory from one image given twice plus a byte copy
of it and another (default 3 samples); Mallory from Colin's other photos; Colin's probe afterwards (`ask --no-llm`);
names with a newline, 10,000 characters, a trailing space and a case-only twin of Colin's name, each with George
W. Bush's photos; and the kiosk's own enrolment (in process) of George's face typed as Colin's name. Needs the
evaluation data (KIOSK_DATA) and the face models.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bench.attacks.cli import KIOSK
from bench.attacks.result import AttackResult

COLIN, TONY, GEORGE = "Colin_Powell", "Tony_Blair", "George_W_Bush"


def _config() -> Any:
    from kiosk.config import load_config

    return load_config(path=None, environ={k: v for k, v in os.environ.items() if k != "KIOSK_CONFIG"})


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOSK_")}
    env.update({"KIOSK_HOME": str(home), "KIOSK_PATHS__MODELS_DIR": str(_config().paths.models)})
    return env


def read(path: Path) -> np.ndarray:
    image = cv2.imread(str(path))
    if image is None:
        raise FileNotFoundError(f"cannot read {path}")
    return image


def canvas(*faces: Path, side: int = 200, pad: int = 60) -> np.ndarray:
    tiles = [cv2.resize(read(face), (side, side), interpolation=cv2.INTER_CUBIC) for face in faces]
    image = np.full((side + 2 * pad, len(tiles) * (side + pad) + pad, 3), 128, np.uint8)
    for index, tile in enumerate(tiles):
        x = pad + index * (side + pad)
        image[pad : pad + side, x : x + side] = tile
    return image


class _Kiosk:
    def __init__(self, workdir: Path) -> None:
        self.env = _environment(workdir / "home")

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*KIOSK, *args], env=self.env, capture_output=True, text=True, timeout=300, check=False)

    def users(self) -> dict[str, int]:
        listed = json.loads(self("users", "list", "--json").stdout or "[]")
        return {row["name"]: row["modalities"].get("face", {}).get("templates", 0) for row in listed}


def _error(done: subprocess.CompletedProcess[str]) -> str:
    if done.returncode == 0:
        return "accepted"
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    return errors[-1][:200] if errors else f"(no error line; stderr ends: {done.stderr.strip()[-120:]})"


def _refusal(
    attack: str, expected: str, done: subprocess.CompletedProcess[str], kiosk: _Kiosk, before: dict[str, int]
) -> AttackResult:
    after = kiosk.users()
    changed = after != before
    observed = f"exit {done.returncode}: {_error(done)}; users {'CHANGED to ' + str(after) if changed else 'unchanged'}"
    broken = done.returncode == 0 or changed or "Traceback" in done.stderr
    return AttackResult(attack, expected, observed, broken)


def run(workdir: Path) -> list[AttackResult]:
    root = _config().paths.eval_data_dir / "lfw3d_frontalized" / "images"
    if not root.is_dir():
        return [AttackResult("enrollment poisoning", "refused", f"not run: no LFW3D images at {root}", False)]
    images = workdir / "images"
    images.mkdir(parents=True, exist_ok=True)
    crops = {person: sorted((root / person).glob("*.jpg")) for person in (COLIN, TONY, GEORGE)}

    def saved(name: str, image: np.ndarray) -> str:
        path = images / f"{name}.png"
        cv2.imwrite(str(path), image)
        return str(path)

    kiosk = _Kiosk(workdir)
    for person in (COLIN, TONY):
        paths = [saved(f"{person}_{k}", canvas(crops[person][k])) for k in range(4)]
        done = kiosk("users", "enroll", person, "--face", *paths)
        if done.returncode != 0:
            return [AttackResult("enrollment setup", f"{person} enrolled", f"failed: {_error(done)}", True)]
    before = kiosk.users()
    results = []

    two_faces = [saved(f"pair_{k}", canvas(crops[COLIN][k], crops[TONY][k])) for k in range(4, 8)]
    results.append(
        _refusal(
            "enroll Mallory from 4 images of Colin and Tony side by side (--min-samples 2)",
            "refused: every sample shows 2 faces; nothing stored",
            kiosk("users", "enroll", "Mallory", "--face", *two_faces, "--min-samples", "2"),
            kiosk,
            before,
        )
    )
    once = saved("colin_8", canvas(crops[COLIN][8]))
    copy = images / "colin_8_copy.png"
    shutil.copyfile(once, copy)
    results.append(
        _refusal(
            "enroll Mallory from one image given twice, a byte copy of it and one more (default 3 samples)",
            "refused: repeats are duplicates, 2 of 4 usable; nothing stored",
            kiosk(
                "users",
                "enroll",
                "Mallory",
                "--face",
                once,
                once,
                str(copy),
                saved("colin_9", canvas(crops[COLIN][9])),
            ),
            kiosk,
            before,
        )
    )
    colin_photos = [saved(f"colin_{k}", canvas(crops[COLIN][k])) for k in range(8, 12)]
    stolen = kiosk("users", "enroll", "Mallory", "--face", *colin_photos, "--min-samples", "2")
    result = _refusal(
        "enroll Mallory from 4 other single-face photos of Colin",
        "refused: the templates match an enrolled person (Colin_Powell) above tau; nothing stored",
        stolen,
        kiosk,
        before,
    )
    results.append(
        AttackResult(result.attack, result.expected, result.observed, result.broken or COLIN not in stolen.stderr)
    )

    probe = saved("colin_probe", canvas(crops[COLIN][12]))
    asked = kiosk("ask", "what is my name?", "--face", probe, "--no-llm", "--json")
    identity = (json.loads(asked.stdout).get("identity") or {}) if asked.returncode == 0 else {}
    name = identity.get("name") if isinstance(identity, dict) else None
    results.append(
        AttackResult(
            "Colin's probe after the attacks (ask --face, --no-llm)",
            "verified as Colin_Powell",
            f"exit {asked.returncode}: verified as {name!r}" + ("" if asked.returncode == 0 else f" ({_error(asked)})"),
            name != COLIN,
        )
    )

    george = [saved(f"george_{k}", canvas(crops[GEORGE][k])) for k in range(4)]
    for label, bad_name in (
        ("a newline", f"{COLIN}\n"),
        ("10,000 characters", "C" * 10_000),
        ("a trailing space", f"{COLIN} "),
        ("a case-only twin", COLIN.lower()),
    ):
        done = kiosk("users", "enroll", bad_name, "--face", *george)
        outcome = _refusal(
            f"enroll George W. Bush's photos under Colin's name with {label}",
            "refused with one clear line; Colin's templates untouched",
            done,
            kiosk,
            before,
        )
        one_line = len([line for line in done.stderr.splitlines() if line.startswith("error:")]) == 1
        results.append(AttackResult(outcome.attack, outcome.expected, outcome.observed, outcome.broken or not one_line))
    results.append(_kiosk_takeover(kiosk, crops[GEORGE][4:10], before))
    return results


def _kiosk_takeover(kiosk: _Kiosk, photos: list[Path], before: dict[str, int]) -> AttackResult:
    """The kiosk's own enrolment (open to anyone at the terminal) with George's face under Colin's name."""
    import types

    from kiosk.app.enrolment import Enrolment
    from kiosk.app.views import EnrollSample
    from kiosk.calibration.active import active_threshold
    from kiosk.config import load_config
    from kiosk.errors import KioskError
    from kiosk.identity.face import load_face_embedder
    from kiosk.memory.open import open_store

    cfg = load_config(path=None, environ=kiosk.env)
    face = load_face_embedder(cfg)
    tau = active_threshold(cfg, "face", face.model_sha256)
    frames = []
    for path in photos:
        try:
            frames.append(EnrollSample(True, None, face.embed_image(canvas(path))))
        except KioskError:
            continue
    live = types.SimpleNamespace(
        face=face, assistant=types.SimpleNamespace(threshold=lambda *_: tau), forget_templates=lambda: None
    )
    store = open_store(cfg)
    try:
        audit = types.SimpleNamespace(record=lambda *_, **__: None)
        enrolment = Enrolment(store, live, types.SimpleNamespace(available=False), audit)  # type: ignore[arg-type]
        try:
            enrolment.enroll(COLIN, frames)
            observed = "accepted: George's face replaced Colin's templates"
        except KioskError as exc:
            observed = f"refused: {exc.one_line()[:160]}"
    finally:
        store.close()
    after = kiosk.users()
    return AttackResult(
        f"kiosk enrolment (no admin) of George W. Bush's face typed as '{COLIN}' ({len(frames)} frames)",
        "refused: the name is taken by a face this one does not match; Colin's templates untouched",
        f"{observed}; users {'unchanged' if after == before else 'CHANGED to ' + str(after)}",
        not observed.startswith("refused") or after != before,
    )


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for attack in run(Path(folder)):
            print(f"{'BROKEN' if attack.broken else 'held  '} | {attack.attack} | {attack.observed}")
