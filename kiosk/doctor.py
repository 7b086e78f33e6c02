"""Health checks for an installed terminal: what is wrong and what to do about it, one line each."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from kiosk.config import KioskConfig
from kiosk.errors import KioskError
from kiosk.models import ModelStore

if TYPE_CHECKING:
    from kiosk.calibration.schema import Calibration
    from kiosk.memory.sql.sealing import DamagedRow

Status = Literal["ok", "warn", "fail"]
MIN_FREE_BYTES_FAIL = 200 * 1024**2
MIN_FREE_BYTES_WARN = 1024**3


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    message: str
    fix: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def _model_fix(name: str) -> str:
    if getattr(sys, "frozen", False):  # the bundle has no pip and a terminal may have no network
        return (
            "reinstall the bundle (sudo <bundle>/packaging/install.sh): it carries the verified models; "
            f"or put a good copy of the '{name}' file back and run `kiosk models verify`"
        )
    return f"delete it and run `kiosk models pull {name}`"


def check_models(config: KioskConfig) -> list[Check]:
    store = ModelStore(config.paths.models)
    checks = []
    for name, entry in store.manifest.models.items():
        if entry.optional and not store.path(name).exists():
            continue
        state = store.status(name)
        if state.verified:
            checks.append(Check(f"model {name}", "ok", f"{state.path} verified"))
        elif state.present:
            checks.append(
                Check(
                    f"model {name}",
                    "fail",
                    f"{state.path} is corrupt (sha256 differs from the manifest)",
                    _model_fix(name),
                )
            )
        else:
            checks.append(Check(f"model {name}", "fail", f"{state.path} is missing", _model_fix(name)))
    return checks


def _embedder_sha(config: KioskConfig, modality: str) -> str:
    if modality == "face":
        from kiosk.identity.embedders import load_crop_embedder

        return load_crop_embedder(config).model_sha256
    from kiosk.identity.palm import load_palm_embedder

    return load_palm_embedder(config).model_sha256


def check_calibrations(config: KioskConfig) -> list[Check]:
    from kiosk.calibration.active import active_calibration

    checks = []
    for modality in ("face", "palm"):
        if modality == "palm" and config.capture.palm_source is None:
            continue
        try:
            calibration = active_calibration(config, modality, _embedder_sha(config, modality))
        except KioskError as exc:
            checks.append(Check(f"calibration {modality}", "fail", exc.message, exc.hint))
            continue
        checks.append(
            Check(
                f"calibration {modality}",
                "ok",
                f"tau={calibration.threshold:.4f} ({calibration.rule}, {calibration.benchmark}) matches the encoder",
            )
        )
        checks.extend(calibration_trial_checks(calibration))
        checks.extend(cohort_checks(config, modality, calibration.encoder.sha256))
    return checks


def calibration_trial_checks(calibration: Calibration) -> list[Check]:
    """Too few impostor trials to show the calibration's target FAR: with none accepted out of N, the data only
    show FAR below about 3 / N (rule of three)."""
    from kiosk.calibration.site import trials_needed

    modality, target = calibration.modality, calibration.target_far
    trials, needed = calibration.counts.impostor, trials_needed(target)
    if calibration.rule == "fused" and calibration.fused is not None:  # the fused probes' trials set its tau
        trials = min(row.far.trials for row in calibration.fused.trade_off)
    if calibration.rule not in ("far", "strict", "fused") or trials >= needed:
        return []
    return [
        Check(
            f"calibration {modality} trials",
            "warn",
            f"the active {modality} calibration ({calibration.benchmark}) has {trials:,} impostor trials: they show "
            + (f"FAR below about {3 / trials:.1e} at best" if trials else "no FAR at all")
            + f", not the target {target:g} (that needs {needed:,})",
            f"enroll more people and run `kiosk calibrate {modality} --site`, calibrate on a larger labelled set, "
            "or state a higher --target-far",
        )
    ]


def cohort_checks(config: KioskConfig, modality: str, encoder_sha256: str) -> list[Check]:
    """Site calibration needs the impostor cohort shipped for the active encoder."""
    from kiosk.calibration.cohort import load_cohort

    try:
        cohort = load_cohort(config.paths.calibration_dir, modality, encoder_sha256)
    except KioskError as exc:
        return [Check(f"cohort {modality}", "warn", f"site calibration unavailable: {exc.message}", exc.hint)]
    return [Check(f"cohort {modality}", "ok", f"{cohort.info.templates} impostor templates for site calibration")]


def check_database(config: KioskConfig) -> list[Check]:
    from kiosk.memory.open import POSTGRES_SCHEMES, sqlite_path

    url = config.store.url.strip()
    if url.startswith(POSTGRES_SCHEMES):
        return check_fleet_database(config, url)
    path = sqlite_path(url) if url.startswith("sqlite:") else config.paths.db
    if not path.exists():
        return [
            Check(
                "memory database",
                "fail",
                f"{path} does not exist",
                "on a new install start the kiosk once (it creates it); otherwise restore the latest "
                f"backup from {path.parent} or set paths.db_path",
            )
        ]
    from kiosk.memory.open import open_sqlite

    try:
        with open_sqlite(config, path) as store:
            verdict = store.integrity_check()
            notes, users = store.count_notes(), len(store.list_users())
            sealed = check_sealed_rows(store)
    except KioskError as exc:
        return [Check("memory database", "fail", exc.message, exc.hint)]
    if verdict != "ok":
        return [Check("memory database", "fail", f"{path} is damaged: {verdict}", "restore the latest backup")]
    sealed_ok = ", every sealed row authenticates" if store.encrypted and not sealed else ""
    return [Check("memory database", "ok", f"{path}: integrity ok, {users} users, {notes} notes{sealed_ok}"), *sealed]


def _repair(row: DamagedRow, name: str) -> str:
    """The command that takes a damaged sealed row out of the database (none of them needs to open it)."""
    if row.kind == "note":
        return f"kiosk memory delete {row.row_id}"
    if row.kind == "history":
        return f"kiosk memory delete {row.note_id} (its history goes with the note), or restore the latest backup"
    if row.kind == "template":
        return f"kiosk users revoke '{name}', then enroll '{name}' again"
    return f"restore the latest backup, or kiosk users delete '{name}' (every sealed row of theirs is unreadable)"


def check_sealed_rows(store: Any) -> list[Check]:
    """Every sealed row is opened: one that fails authentication is quarantined by the store (skipped on
    reads) and named here with the command that repairs it (none when every row authenticates)."""
    damaged: list[DamagedRow] = store.damaged_sealed_rows()
    if not damaged:
        return []
    owners = {u.id: u.name for u in store.list_users()} | {g.id: g.name for g in store.list_groups()}
    checks = []
    for row in damaged:
        name = owners.get(row.owner_id, f"#{row.owner_id}")
        what = f"{row.kind} {row.row_id} of {name}" + (f" (note {row.note_id})" if row.note_id is not None else "")
        checks.append(
            Check(
                "sealed rows",
                "fail",
                f"{what} fails authentication (altered or damaged); it is quarantined",
                _repair(row, name),
            )
        )
    return checks


def check_fleet_database(config: KioskConfig, url: str) -> list[Check]:
    from kiosk.memory.offline_queue import OfflineQueue
    from kiosk.memory.open import describe_url
    from kiosk.memory.postgres_store import PostgresStore
    from kiosk.security.sealing import master_key_for

    queue_path = config.store.offline_queue or config.paths.data_dir / "fleet-queue.db"
    pending = len(OfflineQueue(queue_path)) if queue_path.exists() else 0
    queued = f"; {pending} notes queued offline" if pending else ""
    try:
        key = master_key_for(config.security, config.paths.data_dir) if config.security.encrypt_at_rest else None
        with PostgresStore(url, master_key=key) as store:
            notes, users, version = store.count_notes(), len(store.list_users()), store.schema_version()
            sealed = check_sealed_rows(store)
    except KioskError as exc:
        return [Check("memory database", "fail", f"{describe_url(url)}: {exc.message}{queued}", exc.hint)]
    sealed_ok = ", every sealed row authenticates" if key is not None and not sealed else ""
    text = f"{describe_url(url)}: fleet schema v{version}, {users} users, {notes} notes{sealed_ok}{queued}"
    return [
        Check("memory database", "warn" if pending else "ok", text, "they sync on the next call" if pending else ""),
        *sealed,
    ]


def check_disk(config: KioskConfig) -> list[Check]:
    folder = config.paths.data_dir
    probe = folder if folder.exists() else folder.parent
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    text = f"{free / 1024**3:.1f} GiB free at {probe}"
    if free < MIN_FREE_BYTES_FAIL:
        return [Check("disk", "fail", text, "free space: the memory DB cannot grow and backups fail")]
    if free < MIN_FREE_BYTES_WARN:
        return [Check("disk", "warn", text, "free some space soon")]
    return [Check("disk", "ok", text)]


def check_cameras(config: KioskConfig, wait_s: float = 3.0) -> list[Check]:
    from kiosk.identity.sources import configured_source

    checks = []
    for which in ("face", "palm"):
        try:
            source = configured_source(config.capture, which)
        except KioskError as exc:
            checks.append(Check(f"{which} source", "fail", exc.message, exc.hint))
            continue
        if source is None:
            if which == "face" and not (config.capture.palm_source or "").strip():
                checks.append(Check("face source", "fail", "no face camera configured", "set capture.face_source"))
            elif which == "face":
                checks.append(Check("face source", "ok", "none: a palm-only terminal (capture.palm_source)"))
            continue
        source.start()
        try:
            deadline = time.monotonic() + wait_s
            while source.latest() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            frame = source.latest()
            if frame is None:
                spec = config.capture.face_source if which == "face" else config.capture.palm_source
                checks.append(
                    Check(
                        f"{which} source",
                        "fail",
                        f"no frame from '{spec}' within {wait_s:.0f} s",
                        "check the cable / device path, or that no other program holds the camera",
                    )
                )
            else:
                height, width = frame.image.shape[:2]
                checks.append(Check(f"{which} source", "ok", f"frames arriving ({width}x{height})"))
        finally:
            source.stop()
    return checks


def check_llm_build(config: KioskConfig) -> list[Check]:
    """The llama.cpp build against this CPU: a build for instructions it lacks would die of SIGILL."""
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        return [Check("llm build", "warn", "llama-cpp-python is not installed", "run packaging/bootstrap.sh")]
    from kiosk.llm.cpu_support import built_for, verified_llama_build

    info = verified_llama_build()
    if not info:  # a frozen bundle: build_bundle.sh only freezes the portable build
        return [Check("llm build", "ok", "the bundle's portable llama.cpp build")]
    return [Check("llm build", "ok", f"llama.cpp built for {', '.join(built_for(info))}")]


CHECKS: dict[str, Callable[[KioskConfig], list[Check]]] = {
    "models": check_models,
    "llm build": check_llm_build,
    "calibration": check_calibrations,
    "database": check_database,
    "disk": check_disk,
    "cameras": check_cameras,
}


def run_checks(config: KioskConfig, skip: tuple[str, ...] = ()) -> list[Check]:
    results: list[Check] = []
    for name, check in CHECKS.items():
        if name in skip:
            continue
        try:
            results.extend(check(config))
        except KioskError as exc:
            results.append(Check(name, "fail", exc.message, exc.hint))
    return results
