"""`kiosk users`: enroll people from face (or palm) images, list them, delete them with all their memory."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from kiosk.cli.common import JsonOption, config, emit, fail, handle_errors
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError, DataError, KioskError, ModelError
from kiosk.identity.gallery import (
    MAX_TEMPLATES,
    OUTLIER_MIN_COSINE,
    Embedder,
    EnrollmentConflict,
    Gallery,
    build_gallery,
    delete_user_by_name,
    enroll,
    enrollment_embed,
    refuse_enrolled_elsewhere,
    samples_from_paths,
)
from kiosk.identity.names import person_name, refuse_look_alike
from kiosk.security.audit import audit_log_for

MODALITY_OPTIONS = {"--face": "face", "--palm": "palm"}
# modality -> (module, loader): the palm helper's module appears in kiosk/identity/palm.py
EMBEDDER_LOADERS = {
    "face": ("kiosk.identity.face", "load_face_embedder"),
    "palm": ("kiosk.identity.palm", "load_palm_embedder"),
}

ENROLL_HELP = (
    "Enroll NAME (or replace their templates) from images.\n\n"
    "Give images after --face and/or --palm: files, folders of images, or a video file (evenly spaced "
    "frames), e.g. `kiosk users enroll Ana --face a.jpg b.jpg c.jpg`.\n\n"
    "Every sample is embedded; a sample with more than one face, a repeated sample and outliers are rejected "
    "with a reason, and at least --min-samples must remain. Templates that already verify as another enrolled "
    "person are refused. Re-enrolling replaces that modality's templates and keeps the person's notes."
)


def parse_modality_paths(args: Sequence[str]) -> dict[str, list[Path]]:
    """`--face a b --palm c --face=d` -> {"face": [a, b, d], "palm": [c]}; order kept, repeats allowed."""
    paths: dict[str, list[Path]] = {}
    current: str | None = None
    for arg in args:
        option, has_value, value = arg.partition("=")
        if option in MODALITY_OPTIONS:
            current = MODALITY_OPTIONS[option]
            paths.setdefault(current, [])
            if has_value:
                paths[current].append(Path(value))
            continue
        if arg.startswith("--"):
            raise DataError(f"unknown option {arg}", "see `kiosk users enroll --help`")
        if current is None:
            raise DataError(f"'{arg}' is not preceded by --face or --palm", "write --face IMG... or --palm IMG...")
        paths[current].append(Path(arg))
    for modality, given in paths.items():
        if not given:
            raise DataError(f"--{modality} needs at least one image", f"write --{modality} IMG...")
    return paths


def load_embedder(cfg: KioskConfig, modality: str) -> Embedder:
    module_name, loader_name = EMBEDDER_LOADERS[modality]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise ModelError(f"{modality} enrollment is not available in this build", "use another modality") from exc
    loader = getattr(module, loader_name)
    embedder: Embedder = loader(cfg)
    return embedder


def enroll_settings(cfg: KioskConfig, modality: str) -> dict[str, Any]:
    """Enrollment thresholds of the modality: its configured enroll_min_samples and the gallery's constants."""
    section = cfg.palm if modality == "palm" else cfg.face
    return {
        "min_samples": section.enroll_min_samples,
        "outlier_min_cosine": OUTLIER_MIN_COSINE["palm" if modality == "palm" else "face"],
        "max_templates": MAX_TEMPLATES,
    }


def enrollment_threshold(cfg: KioskConfig, gallery: Gallery) -> float | None:
    """The active tau new templates are checked against other people with; None when no calibration fits."""
    from kiosk.calibration.active import active_threshold

    try:
        return active_threshold(cfg, gallery.modality, gallery.model_sha256)
    except CalibrationError:
        return None


def open_store(cfg: KioskConfig) -> Any:
    from kiosk.memory.open import open_store as open_configured_store

    return open_configured_store(cfg)


def describe_gallery(gallery: Gallery) -> str:
    lines = [f"{gallery.modality}: {len(gallery.vectors)} template(s) from {len(gallery.outcomes)} sample(s)"]
    for outcome in gallery.outcomes:
        mark = "ok " if outcome.accepted else "-- "
        shown = outcome.cosine_to_medoid is not None and "cosine" not in outcome.reason
        cosine = f" (cos {outcome.cosine_to_medoid:.2f})" if shown else ""
        lines.append(f"  {mark}{outcome.label}: {outcome.reason}{cosine}")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    users = typer.Typer(help="Enrolled people: enroll, list, revoke, delete.", no_args_is_help=True)

    @users.command(
        "enroll",
        help=ENROLL_HELP,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    @handle_errors
    def enroll_command(
        ctx: typer.Context,
        name: str = typer.Argument(..., help="The person's name (unique)."),
        min_samples: int | None = typer.Option(
            None, "--min-samples", min=1, help="Usable samples needed (default: config face.enroll_min_samples)."
        ),
        video_frames: int = typer.Option(
            12, "--video-frames", min=1, help="Frames taken (evenly spaced) from each video file given."
        ),
        precropped: bool = typer.Option(
            False,
            "--precropped",
            "--roi",
            help="Images are already tight face crops / palm ROIs (--roi): skip detection.",
        ),
        as_json: bool = JsonOption,
    ) -> None:
        name = person_name(name)  # before any model is loaded
        requested = parse_modality_paths(ctx.args)
        if not requested:
            raise DataError("no images given", "write --face IMG... and/or --palm IMG...")
        cfg = config()
        store = open_store(cfg)
        try:
            refuse_look_alike(name, [user.name for user in store.list_users()])  # the store refuses it too, later
        finally:
            store.close()
        galleries: list[Gallery] = []
        for modality, paths in requested.items():
            samples = samples_from_paths(paths, video_frames=video_frames)
            settings = enroll_settings(cfg, modality)
            if min_samples is not None:
                settings["min_samples"] = min_samples
            embedder = load_embedder(cfg, modality)
            embed = enrollment_embed(embedder, precropped=precropped)
            galleries.append(build_gallery(embedder, samples, embed=embed, **settings))
        insufficient = [g for g in galleries if not g.sufficient]
        if insufficient:  # nothing is stored unless every requested modality can be enrolled
            if as_json:
                emit({"name": name, "enrolled": False, "galleries": [g.as_dict() for g in galleries]}, True)
            else:
                typer.echo("\n".join(describe_gallery(g) for g in galleries), err=True)
            fail(f"{insufficient[0].problem} — nothing was stored; add clearer images of {name}")
        store = open_store(cfg)
        try:
            thresholds = [enrollment_threshold(cfg, gallery) for gallery in galleries]
            try:
                existing = store.user_by_name(name)
                for gallery, threshold in zip(galleries, thresholds, strict=True):  # every modality before any write
                    refuse_enrolled_elsewhere(store, gallery, threshold, existing.id if existing else None, True)
                results = [
                    enroll(store, name, gallery, threshold=threshold)
                    for gallery, threshold in zip(galleries, thresholds, strict=True)
                ]
            except EnrollmentConflict:
                audit_log_for(cfg).record("enrollment-refused", reason="matches-enrolled-person", by="cli")
                raise
            for result in results:
                audit_log_for(cfg).record(
                    "user-enrolled" if result.created else "user-re-enrolled",
                    user_id=result.user_id,
                    modality=result.gallery.modality,
                    templates=result.templates,
                    key_generation=store.key_generation(result.user_id),
                    by="cli",
                )
        finally:
            store.close()
        payload = {
            "name": results[0].name,
            "user_id": results[0].user_id,
            "enrolled": True,
            "created": results[0].created,
            "galleries": [{**r.gallery.as_dict(), "templates": r.templates} for r in results],
        }

        def human(_: Any) -> str:
            verb = "enrolled" if results[0].created else "re-enrolled (templates replaced, notes kept)"
            details = "\n".join(describe_gallery(r.gallery) for r in results)
            return f"{results[0].name} (id {results[0].user_id}) {verb}\n{details}"

        emit(payload, as_json, human)

    @users.command("list")
    @handle_errors
    def list_command(as_json: bool = JsonOption) -> None:
        """Enrolled people with their templates per modality and their number of notes."""
        store = open_store(config())
        try:
            templates = store.templates()
            rows = []
            for user in store.list_users():
                mine = [t for t in templates if t.user_id == user.id]
                per_modality: dict[str, dict[str, Any]] = {}
                for t in mine:
                    entry = per_modality.setdefault(t.modality, {"templates": 0, "model_sha256": t.model_sha256})
                    entry["templates"] += 1
                rows.append(
                    {
                        "user_id": user.id,
                        "name": user.name,
                        "created_at": user.created_at.isoformat(),
                        "notes": store.count_notes(user.id),
                        "modalities": per_modality,
                    }
                )
        finally:
            store.close()

        def human(items: list[dict[str, Any]]) -> str:
            if not items:
                return "no users enrolled (kiosk users enroll NAME --face IMG...)"
            lines = [f"{'id':>4}  {'name':<24} {'notes':>6}  templates"]
            for row in items:
                modalities = ", ".join(
                    f"{m} x{e['templates']} ({e['model_sha256'][:8]})" for m, e in row["modalities"].items()
                )
                lines.append(f"{row['user_id']:>4}  {row['name']:<24} {row['notes']:>6}  {modalities or 'none'}")
            return "\n".join(lines)

        emit(rows, as_json, human)

    @users.command("delete")
    @handle_errors
    def delete_command(
        name: str = typer.Argument(..., help="The person's name."),
        yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
        as_json: bool = JsonOption,
    ) -> None:
        """Delete a person with all their notes, vectors, links and templates."""
        cfg = config()
        store = open_store(cfg)
        try:
            user = store.user_by_name(name)
            if user is None:
                raise KioskError(f"no user named '{name.strip()}'", "see `kiosk users list`")
            notes = store.count_notes(user.id)
            if not yes and not typer.confirm(
                f"Delete {user.name}: {notes} personal note(s), every group or public note they wrote, "
                "and all templates? This cannot be undone."
            ):
                fail("nothing deleted", code=1)
            delete_user_by_name(store, name)
            audit_log_for(cfg).record("user-forgotten", user_id=int(user.id), notes_deleted=notes, by="cli")
        finally:
            store.close()
        emit(
            {"deleted": True, "user_id": user.id, "name": user.name, "notes_deleted": notes},
            as_json,
            lambda p: (
                f"deleted {p['name']} (id {p['user_id']}), {p['notes_deleted']} personal note(s) and their shared notes"
            ),
        )

    @users.command("revoke")
    @handle_errors
    def revoke_command(
        name: str = typer.Argument(..., help="The person's name."),
        modality: str | None = typer.Option(None, "--modality", help="face or palm (default: every template)."),
        as_json: bool = JsonOption,
    ) -> None:
        """Revoke a person's templates (ISO/IEC 24745 renewability); their notes stay, re-keyed at re-enrollment."""
        if modality not in (None, "face", "palm"):
            raise DataError(f"unknown modality '{modality}'", "use face or palm")
        cfg = config()
        store = open_store(cfg)
        try:
            user = store.user_by_name(name)
            if user is None:
                raise KioskError(f"no user named '{name.strip()}'", "see `kiosk users list`")
            revoked = store.revoke_templates(int(user.id), modality)
            audit_log_for(cfg).record(
                "templates-revoked", user_id=int(user.id), modality=modality or "all", templates=revoked, by="cli"
            )
        finally:
            store.close()
        emit(
            {"revoked": revoked, "user_id": user.id, "name": user.name},
            as_json,
            lambda p: f"revoked {p['revoked']} template(s) of {p['name']}; enroll them again to restore access",
        )

    app.add_typer(users, name="users")
