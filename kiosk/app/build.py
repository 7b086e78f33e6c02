"""The composition root: every part of the application is built here from the settings, and nowhere else.

`build_assistant` is the only place an Assistant is constructed; the CLI, the evaluation and the benchmarks pass
it their own parts (a store, an encoder, a cached LLM, a fixed tau, no back-off). `load_kiosk` builds the whole
kiosk (camera, face models, liveness, store, calibration, LLM, assistant, services) for the Qt app.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kiosk.assistant import Assistant, TextEncoderLike
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError
from kiosk.llm.backend import LLM
from kiosk.llm.locked import close_llm
from kiosk.memory.store import Store
from kiosk.security.admin_access import AdminAccess
from kiosk.security.admin_pin import AdminPin
from kiosk.security.audit import AuditLog, audit_log_for
from kiosk.security.backoff import Backoff

if TYPE_CHECKING:
    from kiosk.app.kiosk import KioskApp
    from kiosk.app.views import Progress
    from kiosk.identity.face import FaceEmbedder
    from kiosk.models import ModelStore

log = logging.getLogger("kiosk.app")


def build_assistant(
    config: KioskConfig,
    store: Store,
    text_encoder: TextEncoderLike,
    llm: LLM | None = None,
    *,
    thresholds: dict[str, float] | None = None,
    backoff: Backoff | None = None,
    audit: AuditLog | None = None,
) -> Assistant:
    """The assistant over `store`: tau from `thresholds` (else the active calibration), the configured gate rule,
    the terminal's back-off unless `backoff` is given. `llm` None answers nothing (gate and retrieval only)."""
    return Assistant(store, text_encoder, llm, config, thresholds, backoff=backoff, audit=audit)


@dataclass(frozen=True)
class AdminGuard:
    """What guards the admin screen from the start, before the kiosk's models load: the PIN and liveness rule."""

    audit: AuditLog
    pin: AdminPin
    access: AdminAccess


def admin_guard(config: KioskConfig) -> AdminGuard:
    audit = audit_log_for(config)
    pin = AdminPin(
        config.paths.data_dir / "admin_pin.json",
        config.ui.admin_pin_attempts,
        config.ui.admin_lockout_s,
        max_lockout_s=max(config.security.backoff_max_s, config.ui.admin_lockout_s),
    )
    return AdminGuard(audit, pin, AdminAccess.for_config(config, pin, audit))


def load_llm(config: KioskConfig, models: ModelStore | None = None) -> LLM:
    """The configured LLM backend (kiosk.llm's registry)."""
    from kiosk.llm.factory import create_llm

    return create_llm(config, models)


def face_thresholds(config: KioskConfig, face: FaceEmbedder) -> tuple[dict[str, float], str | None]:
    """The face tau of the active calibration for this encoder, or no tau and the reason in one line."""
    from kiosk.calibration.active import active_threshold

    try:
        return {"face": active_threshold(config, "face", face.model_sha256)}, None
    except CalibrationError as exc:
        log.warning("no usable face calibration: %s", exc.one_line())
        return {}, exc.one_line()


def load_kiosk(
    config: KioskConfig,
    progress: Progress,
    *,
    llm: LLM | None = None,
    thresholds: dict[str, float] | None = None,
    text_encoder: Any = None,
    face: FaceEmbedder | None = None,
) -> KioskApp:
    """Load everything the kiosk needs; each missing piece is one KioskError naming it.

    `llm`, `thresholds`, `text_encoder` and `face` replace the configured ones (tests, benchmarks); a given LLM
    stays open when the kiosk closes."""
    from kiosk.app.kiosk import KioskApp
    from kiosk.app.live import LiveCamera
    from kiosk.app.palm import load_live_palm, palm_thresholds
    from kiosk.app.terminal_kind import has_scanner, palm_only
    from kiosk.identity.face import load_face_embedder
    from kiosk.identity.pad import ChallengeSession, LivenessMonitor
    from kiosk.identity.sources import open_source
    from kiosk.llm.locked import LockedLLM
    from kiosk.memory.open import open_store
    from kiosk.models import ModelStore
    from kiosk.text import load_text_encoder

    models = ModelStore(config.paths.models)
    progress(0.02, "Checking the camera setting…")
    # Unstarted: a wrong source spec fails here, before a minute of model loading. No camera but a palm
    # scanner: a palm-only terminal.
    source = None if palm_only(config.capture) else open_source(config.capture.face_source)
    progress(0.05, "Opening the memory database…")
    store = open_store(config)
    owned_llm: LLM | None = None
    try:
        progress(0.15, "Loading the text encoder…")
        text_encoder = text_encoder or load_text_encoder(config)
        progress(0.35, "Loading the face models…")
        face = face or load_face_embedder(config, models)
        liveness = None
        if config.pad.enabled and source is not None:
            from kiosk.identity.facemesh import FaceMesh

            liveness = LivenessMonitor(FaceMesh(models.ensure("face-landmark"), config.runtime.threads or 1))
        palm = None
        if has_scanner(config.capture):
            progress(0.55, "Loading the palm encoder…")
            palm = load_live_palm(config, models)
        progress(0.6, "Checking the face calibration…")
        problem = None
        if thresholds is None:
            thresholds, problem = face_thresholds(config, face)
            thresholds |= palm_thresholds(config, palm)
            problem = problem if source is not None else None  # no camera: the face tau is never used
        progress(0.7, "Loading the language model…")
        if llm is None:
            llm = owned_llm = load_llm(config, models)
        progress(0.95, "Starting the camera…")
    except BaseException:
        store.close()
        if owned_llm is not None:
            close_llm(owned_llm)
        raise
    audit = audit_log_for(config)
    shared_llm = LockedLLM(llm)
    assistant = build_assistant(config, store, text_encoder, shared_llm, thresholds=thresholds, audit=audit)
    live = LiveCamera(config, assistant, face, source, audit, liveness, palm)
    live.threshold_problem = problem
    challenge = ChallengeSession(liveness, config.pad.challenge, audit)
    app = KioskApp(config, assistant, shared_llm, live, challenge, audit, owns_llm=owned_llm is not None)
    if config.ui.enrich_notes_when_idle:
        from kiosk.app.enrichment import IdleEnrichment

        app.enrichment = IdleEnrichment.for_store(store, text_encoder, shared_llm)
        app.enrichment.start()
    live.start()
    progress(0.97, "Warming up the language model…")
    try:
        assistant.warm_up()
    except BaseException:
        app.close()
        raise
    progress(1.0, "Ready")
    return app
