"""`kiosk ask`: one question with a biometric probe, answered from the verified person's memory only."""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import typer

from kiosk.cli import common
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError, DataError, KioskError, ProbeError
from kiosk.identity.probe import Modality, Probe
from kiosk.local_time import Zone, local_stamp, zone_named
from kiosk.security.audit import AuditLog


def _read_image(path: Path) -> np.ndarray:
    from kiosk.identity.image_files import read_image_file

    if not path.is_file():
        raise DataError(f"image {path} does not exist", "give the path of a photo")
    image = read_image_file(path)  # ImageTooLarge before decoding
    if image is None:
        raise DataError(f"image {path} cannot be read", "give a JPEG or PNG photo")
    return np.asarray(image)


def probe_from_npy(path: Path, modality: Modality, model_sha256: str | None, store: Any) -> Probe:
    """A probe from a raw embedding file; its encoder is taken to be the one the gallery was enrolled with."""
    if not path.is_file():
        raise DataError(f"probe file {path} does not exist", "give a .npy file holding one embedding")
    try:
        vector = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ProbeError(f"probe file {path} is not a readable .npy array ({exc})", "save it with numpy.save") from exc
    vector = np.squeeze(np.asarray(vector))
    if not (np.issubdtype(vector.dtype, np.integer) or np.issubdtype(vector.dtype, np.floating)):
        raise ProbeError(
            f"probe file {path} holds {vector.dtype} values, not numbers", "save one float embedding with numpy.save"
        )
    if model_sha256 is None:
        shas = {t.model_sha256 for t in store.templates(modality)}
        if len(shas) > 1:
            raise ProbeError(
                f"enrolled {modality} templates come from {len(shas)} encoders",
                "pass --model-sha256 to say which one made the probe",
            )
        model_sha256 = shas.pop() if shas else ""
    return Probe(modality, vector.astype(np.float32), model_sha256, captured_at=path.stat().st_mtime)


def probe_from_faces(paths: Sequence[Path], config: KioskConfig) -> Probe:
    """One face probe from one or more photos, fused as the camera fuses its frames (kiosk.identity.verify): the
    gate's tau is calibrated for such probes, and a single photo is the weakest of them."""
    from kiosk.identity.face import load_face_embedder
    from kiosk.identity.verify import ProbeFuser

    images = [_read_image(path) for path in paths]  # a bad file is refused before a model loads
    face_embedder = load_face_embedder(config)
    fuser = ProbeFuser("face", face_embedder.model_sha256, fuse_frames=len(paths), max_age_s=float("inf"))
    newest = 0.0
    for path, image in zip(paths, images, strict=True):
        analysis = face_embedder.analyse(image)
        if analysis.embedding is None:
            raise ProbeError(f"no usable face in {path}: {analysis.reason}", "use a clear, frontal photo")
        newest = max(newest, path.stat().st_mtime)
        fuser.add(analysis.embedding, newest, 2 if analysis.second_face_in_view else 1)
    return fuser.fuse(newest).require()


def probe_from_palm(path: Path, config: KioskConfig, *, roi: bool = False) -> Probe:
    image = _read_image(path)
    captured_at = path.stat().st_mtime
    from kiosk.identity.palm import load_palm_embedder

    palm_embedder = load_palm_embedder(config)
    vectors = palm_embedder.probe_vectors(image, roi=roi)  # with its re-alignments when palm.alignment_search
    return Probe("palm", vectors.vector, palm_embedder.model_sha256, captured_at, variants=vectors.variants)


class _LazyTextEncoder:
    """Loads the text encoder on first use, so bad probes and fallbacks answer without waiting for it."""

    def __init__(self, config: KioskConfig) -> None:
        self._config = config
        self._encoder: Any = None

    def load(self) -> Any:
        if self._encoder is None:
            from kiosk.text import load_text_encoder

            self._encoder = load_text_encoder(self._config)
        return self._encoder

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        return np.asarray(self.load().encode(sentences))

    def encode_one(self, sentence: str) -> np.ndarray:
        return np.asarray(self.load().encode_one(sentence))


def _human(payload: dict[str, Any], zone: Zone = None) -> str:
    lines = []
    identity = payload["identity"]
    gate = payload["gate"]
    who = f"{identity['name']} (score {identity['score']:.3f})" if identity else "not recognised"
    lines.append(f"identity: {who}; decision {payload['decision']} ({gate['reason']}, tau {gate['threshold']})")
    lines.append(f"gate: {payload['gate_message']}")
    if gate["scores"]:
        scores = ", ".join(f"user {user}: {score:.3f}" for user, score in gate["scores"].items())
        lines.append(f"gate scores: {scores}")
    personal = "" if payload["used_personal_memory"] else " (no personal memory used)"
    if payload.get("below_relevance_floor"):
        personal = " (notes were found, but none was about this question: no personal memory used)"
    lines.append(f"path: {payload['path'] or '-'}; notes used: {len(payload['notes'])}{personal}")
    sensitive = payload.get("sensitive")
    if sensitive and sensitive["withheld_in_top_k"]:
        lines.append(
            f"sensitive: {sensitive['withheld_in_top_k']} of the best matches withheld ({sensitive['reason']}; "
            f"rule {sensitive['rule']})"
        )
    step_up = payload.get("step_up")
    if step_up:
        lines.append(
            f"step-up: {step_up['withheld']} private note(s) of yours would answer this; needs {step_up['needs']}"
        )
    for note in payload["notes"]:
        ref = f" [{note['source_ref']}]" if note["source_ref"] else ""
        scope = "" if note["scope"] == "personal" else f" ({note['scope']})"
        mark = f" [sensitive: {note['sensitivity']}]" if note.get("sensitivity") else ""
        lines.append(
            f"  #{note['id']}{common.printable(ref)}{scope}{mark} sim {note['similarity']:.3f} "
            f"{local_stamp(note['timestamp'], zone)[:10]}: {common.printable(note['content'])}"
        )
    if payload["answer"]:
        lines.append(f"answer: {common.printable(payload['answer'])}")
    timings = ", ".join(f"{name} {value:.1f} ms" for name, value in payload["timings_ms"].items())
    lines.append(f"timings: {timings}")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("ask")
    @common.handle_errors
    def ask(
        question: str = typer.Argument(..., help="The question."),
        probe_npy: Path = typer.Option(None, "--probe-npy", help="A raw embedding (.npy) used as the probe."),
        face: list[Path] = typer.Option(
            None,
            "--face",
            help="A face photo; repeat for several photos of the person, fused into one probe as the camera fuses "
            "its frames (the face tau is set for such probes: one photo passes less often).",
        ),
        palm: Path = typer.Option(
            None, "--palm", help="A palm image; its embedding is the probe (with --face: the second factor)."
        ),
        roi: bool = typer.Option(
            False, "--roi", help="The --palm image is already a palm ROI (from an ROI scanner): skip hand detection."
        ),
        modality: str = typer.Option("face", "--modality", help="Modality of --probe-npy: face or palm."),
        model_sha256: str = typer.Option(
            None, "--model-sha256", help="Encoder of --probe-npy (default: the one the gallery used)."
        ),
        threshold: float = typer.Option(
            None, "--threshold", help="Gate threshold tau instead of the active calibration."
        ),
        below_calibration: bool = typer.Option(
            False,
            "--below-calibration",
            help="Admin: allow a --threshold under the active calibration's tau (written to the audit log).",
        ),
        policy: str = typer.Option(None, "--policy", help="Gate policy: threshold or best-match."),
        k: int = typer.Option(None, "--k", min=1, help="Notes given to the LLM."),
        no_llm: bool = typer.Option(False, "--no-llm", help="Gate and retrieve only; do not generate an answer."),
        as_json: bool = common.JsonOption,
    ) -> None:
        """Ask a question; memory is searched only for the person the probe verifies."""
        from kiosk.app.build import build_assistant, load_llm
        from kiosk.identity.gate import describe
        from kiosk.memory.open import open_store
        from kiosk.retrieval import validate_query
        from kiosk.security.audit import audit_log_for

        config = common.config()
        if policy is not None:
            if policy not in ("threshold", "best-match"):
                raise DataError(f"unknown gate policy '{policy}'", "use threshold or best-match")
            config.gate.policy = policy  # type: ignore[assignment]
        if probe_npy is not None and (face or palm is not None):
            raise DataError("give --probe-npy alone, or --face and/or --palm", "pick one kind of probe")
        if modality not in ("face", "palm"):
            raise DataError(f"unknown modality '{modality}'", "use face or palm")
        if roi and palm is None:
            raise DataError("--roi describes the --palm image, and no --palm was given", "add --palm ROI_IMAGE")
        validate_query(question)
        store = open_store(config)
        assistant: Any = None
        try:
            probe: Probe | None = None
            second: Probe | None = None  # with --face and --palm both: the palm, for sensitive notes (face+palm)
            if probe_npy is not None:
                probe = probe_from_npy(probe_npy, modality, model_sha256, store)
            elif face:
                probe = probe_from_faces(face, config)
                second = probe_from_palm(palm, config, roi=roi) if palm is not None else None
            elif palm is not None:
                probe = probe_from_palm(palm, config, roi=roi)
            audit = audit_log_for(config)
            thresholds: dict[str, float] | None = None
            if threshold is not None and probe is not None:
                thresholds = {str(probe.modality): threshold}
                check_threshold_override(config, probe, threshold, below_calibration, audit)
            encoder = _LazyTextEncoder(config)
            assistant = build_assistant(config, store, encoder, thresholds=thresholds, audit=audit)
            # A bad probe or calibration fails here, before any model loads; the question's own check below is the
            # one verification attempt that counts (back-off) and is audited.
            decision = assistant.verify(probe, record=False)
            started = time.perf_counter()
            if decision.matched_owner_ids:
                encoder.load()
            if not no_llm:
                from kiosk.models import ModelStore

                assistant.llm = load_llm(config, ModelStore(config.paths.models))
            load_ms = (time.perf_counter() - started) * 1000.0
            result = assistant.answer(question, probe, second_probe=second)
            payload = {**result.as_dict(), "gate_message": describe(result.gate, assistant.name_of)}
            result.timings_ms["load_models"] = load_ms
        finally:
            if assistant is not None:
                _release(assistant)
            store.close()
        common.emit(payload, as_json, partial(_human, zone=zone_named(config.ui.time_zone)))


def check_threshold_override(
    config: KioskConfig, probe: Probe, threshold: float, below_calibration: bool, audit: AuditLog
) -> None:
    """A --threshold under the active calibration's tau opens the gate wider than the terminal was calibrated
    for (at -1 it opens everyone's notes): only with --below-calibration, and always written to the audit log.
    Without a calibration for the probe's encoder there is no bound to hold (and no template made by a calibrated
    encoder is compared with such a probe): the override is audited."""
    from kiosk.calibration.active import active_threshold

    try:
        calibrated: float | None = active_threshold(config, probe.modality, probe.model_sha256)
    except KioskError:
        calibrated = None
    if calibrated is not None and threshold >= calibrated:
        return
    if calibrated is not None and not below_calibration:
        raise CalibrationError(
            f"--threshold {threshold} is under the active {probe.modality} calibration's tau {calibrated:.4f}",
            "an admin may pass --below-calibration to lower the gate (written to the audit log)",
        )
    audit.record(
        "gate-override",
        modality=probe.modality,
        threshold=threshold,
        calibrated_threshold=calibrated,
        policy=config.gate.policy,
        source="kiosk ask --below-calibration" if below_calibration else "kiosk ask --threshold",
    )


def _release(assistant: Any) -> None:
    """Free the LLM now: llama.cpp's finaliser prints a traceback if it only runs at interpreter exit."""
    llm, assistant.llm = assistant.llm, None
    close = getattr(llm, "close", None)
    if callable(close):
        close()
    del llm
    gc.collect()
