"""`kiosk calibrate face|palm --data DIR`, `kiosk calibrate face|palm --site` and `kiosk calibrate show`."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from kiosk.cli.common import JsonOption, config, emit, handle_errors
from kiosk.errors import CalibrationError, DataError

RULES = ("auto", "fused", "strict", "tau_d", "eer", "far")
_STAGES = {"embed": "embedding images", "score": "scoring pairs", "analyse": "densities and rates"}


def _summary(payload: dict[str, Any]) -> str:
    calibration = payload["calibration"]
    figures = calibration["figures"]
    lines = [
        f"{calibration['modality']} / {calibration['benchmark']} ({calibration['dataset']['protocol']}): "
        f"{calibration['counts']['genuine']:,} genuine, {calibration['counts']['impostor']:,} impostor pairs, "
        f"{calibration['dataset']['images']:,} images, {calibration['dataset']['identities']:,} identities",
        f"encoder {calibration['encoder']['name']} sha256 {calibration['encoder']['sha256'][:12]}…",
        f"EER {figures['eer']:.2%} at {figures['eer_threshold']:.4f}; tau_D {figures['tau_d']:.4f} "
        f"(modes: impostor {figures['impostor_mode']:.3f}, genuine {figures['genuine_mode']:.3f})",
        f"{'rule':8} {'threshold':>10} {'FAR':>10} {'FAR 95% CI':>20} {'FRR':>8} {'FRR 95% CI':>18}",
    ]
    for name, point in calibration["operating_points"].items():
        far, frr = point["far"], point["frr"]
        far_ci = f"[{far['ci95'][0]:.1e}, {far['ci95'][1]:.1e}]"
        frr_ci = f"[{frr['ci95'][0]:.2%}, {frr['ci95'][1]:.2%}]"
        flag = "" if point["resolved"] else "  (unresolved)"
        lines.append(
            f"{name:8} {point['threshold']:10.4f} {far['value']:10.2e} {far_ci:>20} "
            f"{frr['value']:8.2%} {frr_ci:>18}{flag}"
        )
    for key, point in figures["far_targets"].items():
        lines.append(f"TAR at FAR {key}: {point['tar']['value']:.2%} (threshold {point['threshold']:.4f})")
    fused = calibration.get("fused")
    if fused:
        lines.append(
            f"probes fused over frames ({fused['identities']} people enrolled from {fused['enrol']} images, "
            f"{fused['gallery']} in the gallery), at the fused rule's threshold:"
        )
        for row in fused["trade_off"]:
            lines.append(
                f"  {row['frames']} frame(s): FAR {row['far']['value']:.2e}, FRR {row['frr']['value']:.2%} "
                f"(FAR {fused['target_far']:g} alone needs {row['threshold_at_target']:.4f})"
            )
    lines.append(f"chosen: tau = {calibration['threshold']:.4f} by rule '{calibration['rule']}'")
    lines += [f"warning: {w}" for w in calibration["warnings"]]
    for unreadable in calibration["dataset"]["unreadable"][:10]:
        lines.append(f"unreadable: {unreadable}")
    if payload.get("written"):
        lines.append(f"wrote {payload['written']['json']} and {payload['written']['png']}")
        if not payload["active"]:
            written = Path(payload["written"]["json"])
            modality = calibration["modality"]
            if written.name == payload["active_path_name"]:
                lines.append(
                    f'note: not the active {modality} calibration: set paths.calibration_dir = "{written.parent}"'
                )
            else:
                lines.append(
                    f"note: not the active {modality} calibration; set gate.{modality}_calibration = "
                    f'"{written.name}" (and paths.calibration_dir = "{written.parent}") to use it'
                )
    else:
        lines.append("dry run: nothing written")
    return "\n".join(lines)


def _calibrate(
    modality: str,
    data: Path,
    pairs: Path | None,
    all_impostors: bool,
    use_cache: bool,
    rule: str,
    target_far: float,
    out: Path | None,
    benchmark: str | None,
    max_impostors: int,
    identity_column: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    from kiosk.calibration.active import calibration_path
    from kiosk.calibration.embed import embedding_cache, encoder_name, load_embedder
    from kiosk.calibration.run import DataSpec, run_calibration

    if rule not in RULES:
        raise CalibrationError(f"unknown rule '{rule}'", f"use one of {', '.join(RULES)}")
    if not data.is_dir():
        raise DataError(f"data folder {data} does not exist", "give --data DIR with the images and manifest.csv")
    if pairs is not None and not pairs.is_file():
        raise DataError(f"pairs file {pairs} does not exist", "give --pairs FILE (e.g. LFW pairs.txt)")
    if not 0 < target_far < 1:
        raise CalibrationError(f"target FAR {target_far} is not between 0 and 1", "use e.g. --target-far 1e-4")
    cfg = config()
    spec = DataSpec(
        data_dir=data,
        pairs_file=pairs,
        all_impostors=all_impostors,
        identity_column=identity_column,
        benchmark=benchmark,
        max_impostors=max_impostors or None,
    )
    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=as_json,
    ) as progress:
        loading = progress.add_task(f"loading the {modality} embedder", total=1)
        embedder = load_embedder(cfg, modality)
        progress.update(loading, completed=1)
        tasks: dict[str, Any] = {}

        def report(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(_STAGES.get(stage, stage), total=total)
            progress.update(tasks[stage], completed=done, total=total)

        result = run_calibration(
            spec,
            embedder,
            encoder_name=encoder_name(cfg, modality, embedder),
            rule=rule,  # type: ignore[arg-type]
            target_far=target_far,
            progress=report,
            command="kiosk " + shlex.join(sys.argv[1:]),
            cache=embedding_cache(cfg, embedder, data) if use_cache else None,
        )
    if result.calibration.modality != modality:
        raise CalibrationError(f"the {modality} embedder reports modality {result.calibration.modality}", "")
    payload: dict[str, Any] = {"calibration": result.calibration.model_dump(mode="json"), "written": None}
    if not dry_run:
        json_path, png_path = result.apply(out or cfg.paths.calibration_dir)
        payload["calibration"]["plot"] = png_path.name if png_path else None
        payload["written"] = {"json": str(json_path), "png": str(png_path)}
        active_path = calibration_path(cfg, modality)
        payload["active"] = active_path.resolve() == json_path.resolve()
        payload["active_path_name"] = active_path.name
    emit(payload, as_json, _summary)


def _site_summary(payload: dict[str, Any]) -> str:
    lines = list(payload["lines"])
    if payload.get("written"):
        lines.append(f"applied: wrote {payload['written']}")
        if not payload["active"]:
            modality = payload["proposal"]["modality"]
            lines.append(
                f"note: to keep it after a restart set gate.{modality}_calibration = "
                f'"{Path(payload["written"]).name}" (and paths.calibration_dir = "{Path(payload["written"]).parent}")'
            )
    else:
        lines.append("proposal only: nothing written (pass --apply to use it)")
    return "\n".join(lines)


def _calibrate_site(
    modality: str, target_far: float, apply: bool, below_calibration: bool, out: Path | None, as_json: bool
) -> None:
    """Propose tau from the enrolled people's own frames and the shipped cohort; write it only with --apply, and
    under the active calibration's tau only with --below-calibration (audited)."""
    from kiosk.calibration.active import calibration_path
    from kiosk.calibration.embed import encoder_name, load_embedder
    from kiosk.calibration.schema import EncoderInfo
    from kiosk.calibration.site import calibrate_site, describe_proposal
    from kiosk.cli.users import open_store
    from kiosk.security.audit import audit_log_for

    if not 0 < target_far < 1:
        raise CalibrationError(f"target FAR {target_far} is not between 0 and 1", "use e.g. --target-far 1e-3")
    cfg = config()
    embedder = load_embedder(cfg, modality)
    store = open_store(cfg)
    try:
        templates = store.templates(modality)
    finally:
        store.close()
    site = calibrate_site(
        cfg,
        templates,
        modality=modality,
        encoder=EncoderInfo(name=encoder_name(cfg, modality, embedder), sha256=embedder.model_sha256),
        target_far=target_far,
        command="kiosk " + shlex.join(sys.argv[1:]),
    )
    proposal = site.proposal
    payload: dict[str, Any] = {
        "proposal": proposal.as_dict(),
        "lines": describe_proposal(proposal),
        "written": None,
    }
    if apply:
        if proposal.below_calibration and not below_calibration:
            raise CalibrationError(
                f"the site proposal {proposal.threshold:.4f} is under the active {modality} calibration's tau "
                f"{proposal.calibration_threshold:.4f}; nothing written",
                "an admin may pass --below-calibration to lower the gate (written to the audit log)",
            )
        json_path, _png = site.result.apply(out or cfg.paths.calibration_dir)
        payload["written"] = str(json_path)
        payload["active"] = calibration_path(cfg, modality).resolve() == json_path.resolve()
        audit_log_for(cfg).record(
            "site-calibration-applied",
            modality=modality,
            threshold=proposal.threshold,
            target_far=target_far,
            calibrated_threshold=proposal.calibration_threshold,
            below_calibration=proposal.below_calibration,
        )
    emit(payload, as_json, _site_summary)


def _show_rows(check: bool) -> list[dict[str, Any]]:
    from kiosk.calibration.active import MODALITIES, calibration_path, load_calibration
    from kiosk.calibration.embed import load_embedder
    from kiosk.calibration.sensitive import is_sensitive_file

    cfg = config()
    rows: list[dict[str, Any]] = []
    active_paths = {calibration_path(cfg, m).resolve() for m in MODALITIES}
    for modality in MODALITIES:
        path = calibration_path(cfg, modality)
        row: dict[str, Any] = {"modality": modality, "path": str(path), "active": True}
        try:
            calibration = load_calibration(path, modality)
        except CalibrationError as exc:
            row["error"] = exc.one_line()
            rows.append(row)
            continue
        row.update(_describe(calibration))
        if check:
            try:
                sha = load_embedder(cfg, modality).model_sha256
                row["matches_encoder"] = sha == calibration.encoder.sha256
                row["active_encoder_sha256"] = sha
            except Exception as exc:  # a broken embedder is a finding of `show --check`, not a crash
                row["matches_encoder"] = None
                row["error"] = f"cannot load the {modality} embedder: {exc}"
        rows.append(row)
    directory = Path(cfg.paths.calibration_dir)
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        if path.resolve() in active_paths or _retrieval_calibration(path) or is_sensitive_file(path):
            continue
        if path.name.startswith("cohort-"):  # the impostor cohort of site calibration, no threshold
            continue
        row = {"modality": None, "path": str(path), "active": False}
        try:
            row.update(_describe(load_calibration(path)))
            row["modality"] = row.pop("file_modality")
        except CalibrationError as exc:
            row["error"] = exc.one_line()
        rows.append(row)
    return rows


def _retrieval_calibration(path: Path) -> bool:
    """The text encoder's relevance floor shares the folder; it is no biometric τ."""
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # unreadable: listed with its error
    return isinstance(content, dict) and "modality" not in content and "encoder_sha256" in content


def _describe(calibration: Any) -> dict[str, Any]:
    return {
        "file_modality": calibration.modality,
        "benchmark": calibration.benchmark,
        "protocol": calibration.dataset.protocol,
        "rule": calibration.rule,
        "threshold": calibration.threshold,
        "tau_d": calibration.figures.tau_d,
        "eer": calibration.figures.eer,
        "far_at_threshold": calibration.operating_points[calibration.rule].far.value,
        "frr_at_threshold": calibration.operating_points[calibration.rule].frr.value,
        "rates_of": (
            f"probes fused from {calibration.fused.frames_fused} frames"
            if calibration.rule == "fused" and calibration.fused is not None
            else "image pairs"
        ),
        "encoder": calibration.encoder.name,
        "encoder_sha256": calibration.encoder.sha256,
        "created": calibration.created.isoformat(),
    }


def _show_table(rows: list[dict[str, Any]]) -> str:
    lines = []
    for row in rows:
        state = "active" if row["active"] else "other "
        if "error" in row and "threshold" not in row:
            lines.append(f"{state} {row['modality'] or '?':5} {row['error']}")
            continue
        match = {True: "matches the active encoder", False: "MISMATCH: made for another encoder", None: ""}
        lines.append(
            f"{state} {row['modality']:5} tau={row['threshold']:.4f} ({row['rule']}) tau_D={row['tau_d']:.4f} "
            f"EER={row['eer']:.2%} FAR={row['far_at_threshold']:.1e} FRR={row['frr_at_threshold']:.2%} "
            f"({row['rates_of']}) "
            f"{row['benchmark']}/{row['protocol']} {row['encoder']} {row['encoder_sha256'][:12]}… {row['path']} "
            f"{match.get(row.get('matches_encoder'), '')}".rstrip()
        )
        if row.get("error"):
            lines.append(f"       {row['error']}")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    sub = typer.Typer(help="Calibrate the biometric threshold tau per modality and benchmark.", no_args_is_help=True)

    def make(modality: str) -> None:
        @sub.command(modality)
        @handle_errors
        def run(
            data: Path = typer.Option(None, "--data", help="Image folder with manifest.csv (path,identity)."),
            site: bool = typer.Option(
                False,
                "--site",
                help="Propose tau from the enrolled people's own frames and the shipped impostor cohort.",
            ),
            apply: bool = typer.Option(False, "--apply", help="With --site: write the proposal (<modality>-site.json)"),
            below_calibration: bool = typer.Option(
                False,
                "--below-calibration",
                help="With --site --apply: allow a tau under the active calibration's (written to the audit log).",
            ),
            pairs: Path = typer.Option(None, "--pairs", help="Explicit pairs file (LFW pairs.txt); default all pairs."),
            all_impostors: bool = typer.Option(
                False, "--all-impostors", help="With --pairs: impostors = every different-identity pair of its images."
            ),
            use_cache: bool = typer.Option(
                True, "--cache/--no-cache", help="Reuse embeddings cached under <data_dir>/cache/calibration."
            ),
            rule: str = typer.Option(
                "auto",
                "--rule",
                help="auto (default: fused when the data has enough images per person, else strict), fused (target "
                "FAR for probes fused over the camera's frames, at least strict), strict (max of tau_d and "
                "target-FAR), tau_d, eer, far.",
            ),
            target_far: float = typer.Option(
                1e-4, "--target-far", help="Target false accept rate for far/strict/fused."
            ),
            out: Path = typer.Option(None, "--out", help="Output folder; default paths.calibration_dir."),
            benchmark: str = typer.Option(
                None, "--benchmark", help="Benchmark name in the file name; default from --data."
            ),
            max_impostors: int = typer.Option(
                2_000_000, "--max-impostors", help="Sample impostor pairs above this (0 = all)."
            ),
            identity_column: str = typer.Option(
                None, "--identity-column", help="Manifest identity column; default auto."
            ),
            dry_run: bool = typer.Option(False, "--dry-run", help="Compute and print only; write nothing."),
            as_json: bool = JsonOption,
        ) -> None:
            if site:
                if data is not None:
                    raise DataError("--site uses the enrolled people, not --data", "give one of --site or --data")
                _calibrate_site(modality, target_far, apply, below_calibration, out, as_json)
                return
            if data is None:
                raise DataError("no data to calibrate on", "give --data DIR (labelled images) or --site")
            _calibrate(
                modality,
                data,
                pairs,
                all_impostors,
                use_cache,
                rule,
                target_far,
                out,
                benchmark,
                max_impostors,
                identity_column,
                dry_run,
                as_json,
            )

        run.__doc__ = (
            f"Calibrate the {modality} threshold from labelled images (writes JSON + PNG), or with --site propose "
            "one from the enrolled people's frames."
        )

    make("face")
    make("palm")

    @sub.command("show")
    @handle_errors
    def show(
        check: bool = typer.Option(False, "--check", help="Load the embedders and check the model sha256 match."),
        as_json: bool = JsonOption,
    ) -> None:
        """List the active calibrations (and other files in the calibration folder)."""
        emit(_show_rows(check), as_json, _show_table)

    app.add_typer(sub, name="calibrate")
