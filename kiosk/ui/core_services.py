"""KioskServices on the real core: frame source + face pipeline + verifier, SQLite store, assistant, LLM.

The face pipeline runs continuously on the ContinuousVerifier's thread; everything here reads its latest
analysis, so the pipeline is only ever used from that one thread. The LLM is shared by answers, note
construction and admin swaps behind one lock (llama.cpp contexts are not thread-safe).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError, DataError, KioskError, LLMError, ProbeError, StoreError
from kiosk.identity.face import FaceAnalysis, FaceEmbedder
from kiosk.identity.gallery import Gallery, Sample, build_gallery
from kiosk.identity.gallery import enroll as enroll_gallery
from kiosk.identity.pad import ChallengeSession, LivenessMonitor
from kiosk.identity.probe import Probe
from kiosk.identity.sources import SourceState, ThreadedSource, as_bgr8
from kiosk.identity.verify import ContinuousVerifier, ProbeFuser, verify
from kiosk.llm.backend import LLM, Message, optional_ability
from kiosk.memory.note import Template
from kiosk.memory.open import open_store
from kiosk.memory.store import Store
from kiosk.security.audit import audit_log_for
from kiosk.ui.services import (
    AdminSettings,
    AnswerView,
    CalibrationView,
    CameraState,
    ChallengeView,
    EnrollSample,
    FaceBox,
    FrameView,
    GroupView,
    Identity,
    IdentityState,
    NoteView,
    Progress,
    TokenSink,
    UserView,
    Verification,
)

log = logging.getLogger("kiosk.ui")

DISPLAY_MAX_WIDTH = 960
TEMPLATE_CACHE_S = 2.0
CHALLENGE_VALID_S = 300.0  # a passed enrollment challenge is good for this long (time to type a name)
CAMERA_STATES: dict[SourceState, CameraState] = {
    SourceState.STARTING: "starting",
    SourceState.RUNNING: "live",
    SourceState.RECONNECTING: "reconnecting",
    SourceState.ENDED: "ended",
    SourceState.FAILED: "lost",
}
QUALITY_HINTS = {
    "too-small": "Come a little closer",
    "too-blurred": "Hold still for a moment",
    "too-turned": "Look straight at the camera",
    "too-dark": "More light on your face, please",
}


class LockedLLM:
    """One LLM shared by threads: each call (a whole stream included) holds the lock."""

    def __init__(self, llm: LLM) -> None:
        self.inner = llm
        self.name = llm.name
        self.lock = threading.Lock()

    def chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        json_schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
    ) -> str:
        with self.lock:
            return self.inner.chat(
                messages, max_tokens=max_tokens, temperature=temperature, json_schema=json_schema, stop=stop
            )

    def chat_avoiding_first_words(
        self, messages: list[Message], words: Sequence[str], *, max_tokens: int, temperature: float = 0.0
    ) -> str:
        avoid = optional_ability(self.inner, "chat_avoiding_first_words", "ban a reply's first words")
        with self.lock:
            return str(avoid(messages, words, max_tokens=max_tokens, temperature=temperature))

    def continue_reply(self, messages: list[Message], start: str, *, max_tokens: int, temperature: float = 0.0) -> str:
        go_on = optional_ability(self.inner, "continue_reply", "continue a reply")
        with self.lock:
            return str(go_on(messages, start, max_tokens=max_tokens, temperature=temperature))

    def stream(self, messages: list[Message], *, max_tokens: int, temperature: float = 0.0) -> Iterator[str]:
        with self.lock:
            yield from self.inner.stream(messages, max_tokens=max_tokens, temperature=temperature)

    def warm_up(self, system_prompts: list[str]) -> None:
        warm = getattr(self.inner, "warm_up", None)
        if warm is not None:
            with self.lock:
                warm(system_prompts)

    def prefill(self, messages: list[Message]) -> int:
        """Not under the lock: the backend's prefill never waits and gives way to any queued request."""
        prefill = getattr(self.inner, "prefill", None)
        return int(prefill(messages)) if prefill is not None else 0


class _PrecomputedEmbedder:
    """Enrollment samples are embeddings the verifier already computed; build_gallery still rejects outliers."""

    modality = "face"

    def __init__(self, model_sha256: str) -> None:
        self.model_sha256 = model_sha256

    def embed_image(self, image: np.ndarray) -> np.ndarray:
        return image


def quality_hint(analysis: FaceAnalysis | None) -> str | None:
    """What the person should do so the kiosk gets a usable face, in a few words."""
    if analysis is None:
        return None
    if analysis.second_face_in_view:
        return "Only one person in view, please"
    if not analysis.faces:
        return None
    if analysis.embedding is not None:
        return None
    best = max(analysis.faces, key=lambda face: face.prominence)
    for code in best.quality.reasons:
        if code in QUALITY_HINTS:
            return QUALITY_HINTS[code]
    return analysis.reason or None


def _display_image(image: np.ndarray) -> tuple[np.ndarray, float]:
    bgr = as_bgr8(image)
    scale = min(1.0, DISPLAY_MAX_WIDTH / bgr.shape[1])
    if scale < 1.0:
        bgr = cv2.resize(bgr, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), scale


class CoreServices:
    def __init__(
        self,
        config: KioskConfig,
        store: Store,
        text_encoder: Any,
        llm: LLM,
        face: FaceEmbedder,
        source: ThreadedSource,
        thresholds: dict[str, float],
        threshold_problem: str | None = None,
        owns_llm: bool = True,
        liveness: LivenessMonitor | None = None,
    ) -> None:
        from kiosk.assistant import Assistant

        self.config = config
        self.store = store
        self.face = face
        self.source = source
        self.llm = LockedLLM(llm)
        self._owns_llm = owns_llm  # a caller's LLM (tests, benchmarks) stays open for its next user
        self.thresholds = thresholds
        self.threshold_problem = threshold_problem
        self.audit = audit_log_for(config)
        self.assistant = Assistant(store, text_encoder, self.llm, config, thresholds, audit=self.audit)
        self.fuser = ProbeFuser.from_config(config, "face", face.model_sha256)
        self._analysis_period_s = 1.0 / config.ui.analysis_fps
        self._last_analysis = 0.0
        self.liveness = liveness
        self.challenge = ChallengeSession(liveness, config.pad.challenge, self.audit)
        self.verifier = ContinuousVerifier(
            source, self._paced_analyse, self.fuser, on_analysis=liveness.observe if liveness is not None else None
        )
        self._templates: tuple[float, list[Template], dict[int, str]] = (0.0, [], {})
        self._templates_lock = threading.Lock()
        self._last_view_index = -1
        source.start()
        self.verifier.start()

    @classmethod
    def load(
        cls,
        config: KioskConfig,
        progress: Progress,
        *,
        llm: LLM | None = None,
        thresholds: dict[str, float] | None = None,
        text_encoder: Any = None,
        face: FaceEmbedder | None = None,
    ) -> CoreServices:
        """Load everything the kiosk needs; each missing piece is one KioskError naming it."""
        from kiosk.identity.face import load_face_embedder
        from kiosk.identity.sources import open_source
        from kiosk.models import ModelStore
        from kiosk.text import load_text_encoder

        models = ModelStore(config.paths.models)
        progress(0.02, "Checking the camera setting…")
        # Unstarted: a wrong source spec fails here, before a minute of model loading.
        source = open_source(
            config.capture.face_source,
            config.capture.loop_video,
            max_backoff_s=config.capture.reconnect_max_backoff_s,
        )
        progress(0.05, "Opening the memory database…")
        store = open_store(config)
        owned_llm: LLM | None = None
        try:
            progress(0.15, "Loading the text encoder…")
            text_encoder = text_encoder or load_text_encoder(config)
            progress(0.35, "Loading the face models…")
            face = face or load_face_embedder(config, models)
            liveness = None
            if config.pad.enabled:
                from kiosk.identity.facemesh import FaceMesh

                mesh = (
                    FaceMesh(models.ensure("face-landmark"), config.runtime.threads or 1) if config.pad.mesh else None
                )
                liveness = LivenessMonitor(config.pad, mesh)
            progress(0.6, "Checking the face calibration…")
            problem = None
            if thresholds is None:
                thresholds = {}
                try:
                    from kiosk.calibration.active import active_threshold

                    thresholds["face"] = active_threshold(config, "face", face.model_sha256)
                except CalibrationError as exc:
                    problem = exc.one_line()
                    log.warning("no usable face calibration: %s", problem)
            progress(0.7, "Loading the language model…")
            if llm is None:
                from kiosk.llm.factory import create_llm

                llm = owned_llm = create_llm(config, models)
            progress(0.95, "Starting the camera…")
        except BaseException:
            store.close()
            if owned_llm is not None:
                close_llm(owned_llm)
            raise
        services = cls(
            config,
            store,
            text_encoder,
            llm,
            face,
            source,
            thresholds,
            problem,
            owns_llm=owned_llm is not None,
            liveness=liveness,
        )
        progress(0.97, "Warming up the language model…")
        try:
            services.assistant.warm_up()
        except BaseException:
            services.close()
            raise
        progress(1.0, "Ready")
        return services

    def _paced_analyse(self, image: np.ndarray) -> FaceAnalysis:
        """At most ui.analysis_fps analyses a second: the kiosk needs a steady badge, not every frame.

        The wait comes before the analysis, so the frame is at most one period old and keeps its own timestamp.
        """
        wait = self._last_analysis + self._analysis_period_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last_analysis = time.monotonic()
        return self.face.analyse(image)

    # --- templates ----------------------------------------------------------------------------------
    def _enrolled(self) -> tuple[list[Template], dict[int, str]]:
        with self._templates_lock:
            loaded_at, templates, names = self._templates
            if time.monotonic() - loaded_at > TEMPLATE_CACHE_S:
                templates = self.store.templates("face")
                names = {user.id: user.name for user in self.store.list_users() if user.id is not None}
                self._templates = (time.monotonic(), templates, names)
            return templates, names

    def _forget_templates(self) -> None:
        with self._templates_lock:
            self._templates = (0.0, [], {})

    def _identity_of(self, probe: Probe | None, faces_seen: int) -> Identity:
        if faces_seen > 1 or (probe is not None and probe.faces_in_view > 1):
            return Identity("multiple")
        if probe is None:
            return Identity("unclear" if faces_seen else "nobody")
        tau = self.thresholds.get(probe.modality)
        if tau is None:
            return Identity("unknown")
        templates, names = self._enrolled()
        result = verify(probe, templates, tau, names=names, margin=self.config.gate.best_match_margin)
        if result.decision == "match" and result.best is not None:
            return Identity("recognised", result.user_id, result.best.name, result.best.score)
        if result.decision == "multiple-faces":
            return Identity("multiple")
        return Identity("unknown", score=result.best.score if result.best else None)

    # --- camera -------------------------------------------------------------------------------------
    def _camera(self) -> tuple[CameraState, str]:
        status = self.source.status()
        return CAMERA_STATES.get(status.state, "lost"), status.message

    def analyse_latest(self) -> FrameView:
        latest = self.verifier.latest()
        deadline = time.monotonic() + 0.3
        while (latest is None or latest.frame.index == self._last_view_index) and time.monotonic() < deadline:
            time.sleep(0.01)
            latest = self.verifier.latest()
        camera, message = self._camera()
        if latest is None:
            identity = Identity("no-camera") if camera in ("lost", "reconnecting") else Identity("nobody")
            return FrameView(None, time.time(), (), identity, None, camera if camera != "live" else "starting", message)
        self._last_view_index = latest.frame.index
        image, scale = _display_image(latest.frame.image)
        analysis: FaceAnalysis | None = latest.analysis
        boxes: list[FaceBox] = []
        faces_seen = 0
        if analysis is not None:
            faces_seen = analysis.faces_in_view
            for index, face in enumerate(analysis.faces):
                x, y, w, h = face.detection.box
                boxes.append(
                    FaceBox(
                        int(x * scale),
                        int(y * scale),
                        int(w * scale),
                        int(h * scale),
                        index == analysis.requester_index,
                    )
                )
        fused = self.verifier.probe()
        identity = self._identity_of(fused.probe, faces_seen)
        stale = time.time() - latest.frame.timestamp > 2.0
        if camera in ("lost", "reconnecting") and stale:
            identity = Identity("no-camera")
        hint = quality_hint(analysis) or latest.error
        if self.threshold_problem and identity.state not in ("nobody", "unclear"):
            hint = "Not calibrated yet: answers use no personal memory"
        return FrameView(
            image, latest.frame.timestamp, tuple(boxes), identity, hint, camera if stale else "live", message
        )

    def verify_now(self) -> Verification:
        """A probe whose newest frame was captured after this call began (never a cached login).

        Waits up to ui.verify_timeout_s for such a frame with a usable face; the fused probe may add the
        few good frames just before it (ProbeFuser's window), all younger than face.fuse_max_age_s.
        """
        asked_at = time.time()
        deadline = time.monotonic() + self.config.ui.verify_timeout_s
        while True:
            latest = self.verifier.latest()
            fresh = latest is not None and latest.frame.timestamp >= asked_at
            fused = self.verifier.probe()
            probe = fused.probe if fused.probe is not None and fused.probe.captured_at >= asked_at else None
            if probe is not None or time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        if latest is None or not fresh:
            _state, message = self._camera()
            return Verification(Identity("no-camera"), None, f"the camera delivered no new frame in time ({message})")
        analysis: FaceAnalysis | None = latest.analysis
        faces_seen = analysis.faces_in_view if analysis is not None else 0
        if probe is None:
            reason = quality_hint(analysis) or fused.reason
            state: IdentityState = "multiple" if faces_seen > 1 else "unclear" if faces_seen else "nobody"
            return Verification(Identity(state), None, reason)
        if self.threshold_problem:
            return Verification(Identity("unknown"), None, self.threshold_problem)
        wait = self.assistant.backoff.wait_s()
        if wait > 0:  # the failures are counted where the gate decides (Assistant.verify), once per question
            return Verification(Identity("unknown"), None, f"Too many failed attempts. Try again in {wait:.0f} s.")
        if self.liveness is not None:
            probe = self.liveness.attach(probe)
            if probe.liveness_blocks:
                assert probe.liveness is not None
                log.warning("query refused personal memory: %s", probe.liveness.reason)
                self.audit.record("presentation-attack-suspected", cues=",".join(probe.liveness.fired))
                return Verification(Identity("unknown"), probe, probe.liveness.reason)
        return Verification(self._identity_of(probe, faces_seen), probe)

    # --- conversation -------------------------------------------------------------------------------
    def answer(self, question: str, verification: Verification, on_token: TokenSink) -> AnswerView:
        try:
            result = self.assistant.answer(question, verification.probe, stream=on_token)
        except KioskError:
            raise
        except Exception as exc:  # llama.cpp and HTTP backends raise their own types
            raise LLMError(f"the language model failed ({type(exc).__name__}: {exc})", "try again") from exc
        notes = tuple(
            NoteView(
                int(item.note.id or 0),
                item.note.content,
                item.note.timestamp,
                item.similarity,
                item.note.sensitivity,
                item.note.scope,
            )
            for item in result.notes
        )
        identity = verification.identity
        if result.identity is not None and identity.state == "recognised":
            identity = Identity("recognised", result.identity.user_id, result.identity.name, result.identity.score)
        probe = verification.probe
        refused = probe.liveness.reason if probe is not None and probe.liveness_blocks and probe.liveness else None
        return AnswerView(
            result.answer,
            result.decision,
            identity,
            notes,
            result.path,
            dict(result.timings_ms),
            refused,
            withheld_sensitive=result.retrieval.withheld_sensitive,
        )

    def prepare(self, partial_question: str) -> None:
        """Prefill the answer prompt for the words typed so far, for whoever is verified right now."""
        if not self.config.llm.prefill_while_typing:
            return
        probe = self.verifier.probe().probe
        if probe is None or time.time() - probe.captured_at > self.config.face.fuse_max_age_s:
            return
        try:
            self.assistant.prepare(partial_question, probe)
        except KioskError as exc:  # a half-typed question may be invalid: nothing to prepare
            log.debug("no prefill: %s", exc.one_line())

    def remember(self, text: str, verification: Verification) -> int | None:
        if verification.identity.state != "recognised" or verification.probe is None:
            return None
        try:
            return self.assistant.remember(text, verification.probe, mode=self.config.ui.remember_construction)
        except KioskError:
            raise
        except Exception as exc:  # apsw errors: locked, full, read-only
            raise StoreError(f"the memory database refused the note ({exc})", "check free disk space") from exc

    # --- enrollment ---------------------------------------------------------------------------------
    def enrollment_sample(self) -> EnrollSample:
        latest = self.verifier.latest()
        previous = latest.frame.index if latest is not None else -1
        deadline = time.monotonic() + 1.0
        while latest is None or latest.frame.index == previous:
            if time.monotonic() >= deadline:
                return EnrollSample(False, "Waiting for the camera…")
            time.sleep(0.01)
            latest = self.verifier.latest()
        analysis: FaceAnalysis | None = latest.analysis
        if analysis is None:
            return EnrollSample(False, latest.error or "Waiting for the camera…")
        if analysis.second_face_in_view:
            return EnrollSample(False, "Only one person in view, please")
        if analysis.embedding is None:
            return EnrollSample(False, quality_hint(analysis) or "Look at the camera")
        return EnrollSample(True, None, analysis.embedding.copy())

    def start_challenge(self, purpose: str = "enrollment") -> ChallengeView:
        report = self.challenge.start(purpose)
        return ChallengeView(report.status, report.prompt, report.message)

    def challenge_status(self) -> ChallengeView:
        report = self.challenge.status()
        return ChallengeView(report.status, report.prompt, report.message)

    def enroll(self, name: str, samples: Sequence[EnrollSample]) -> UserView:
        if self.challenge.available:
            if not self.challenge.vouches_for("enrollment", CHALLENGE_VALID_S):
                raise ProbeError(
                    "the liveness challenge was not passed just before enrolling",
                    "start the enrollment again and follow the blink / head-turn prompt",
                )
            self.challenge.use_up()
        vectors = [s.embedding for s in samples if s.ok and s.embedding is not None]
        gallery: Gallery = build_gallery(
            _PrecomputedEmbedder(self.face.model_sha256),
            [Sample(f"frame {i + 1}", vector) for i, vector in enumerate(vectors)],
        )
        enrolled = enroll_gallery(self.store, name, gallery)
        self.audit.record(
            "user-enrolled" if enrolled.created else "user-re-enrolled",
            user_id=enrolled.user_id,
            modality="face",
            templates=enrolled.templates,
            key_generation=self.store.key_generation(enrolled.user_id) if hasattr(self.store, "key_generation") else 0,
        )
        self._forget_templates()
        return UserView(enrolled.user_id, enrolled.name, self.store.count_notes(enrolled.user_id), ("face",))

    # --- own memories -------------------------------------------------------------------------------
    def _owner(self, verification: Verification) -> int:
        if verification.identity.state != "recognised" or verification.identity.user_id is None:
            raise ProbeError("you were not recognised just now", "stand alone in front of the camera")
        return verification.identity.user_id

    def list_notes(self, verification: Verification) -> list[NoteView]:
        owner = self._owner(verification)
        notes = self.store.list_notes(owner)
        return [
            NoteView(int(n.id or 0), n.content, n.timestamp, None, n.sensitivity, n.scope, n.archived)
            for n in reversed(notes)
        ]

    def restore_note(self, verification: Verification, note_id: int) -> None:
        owner = self._owner(verification)
        note = self.store.get_note(note_id)
        if note is None or note.owner_id != owner:
            raise StoreError("that memory is not yours or no longer exists", "reopen your memories")
        self.store.restore_note(note_id, datetime.now(UTC))

    def delete_note(self, verification: Verification, note_id: int) -> None:
        owner = self._owner(verification)
        note = self.store.get_note(note_id)
        if note is None or note.owner_id != owner:
            raise StoreError("that memory is not yours or no longer exists", "reopen your memories")
        self.store.delete_note(note_id)
        self.assistant.retriever.forget_owner(owner)
        self.audit.record("note-deleted", user_id=owner, note_id=note_id, by="owner")

    def forget_me(self, verification: Verification) -> None:
        owner = self._owner(verification)
        self.store.delete_user(owner)
        self.assistant.retriever.forget_owner(owner)
        self._forget_templates()
        self.audit.record("user-forgotten", user_id=owner, by="self")

    # --- admin --------------------------------------------------------------------------------------
    def list_users(self) -> list[UserView]:
        modalities: dict[int, set[str]] = {}
        for template in self.store.templates():
            modalities.setdefault(template.user_id, set()).add(template.modality)
        return [
            UserView(
                int(u.id or 0), u.name, self.store.count_notes(u.id), tuple(sorted(modalities.get(int(u.id or 0), ())))
            )
            for u in self.store.list_users()
        ]

    def list_groups(self) -> list[GroupView]:
        return [self._group_view(group.id, group.name) for group in self.store.list_groups()]

    def _group_view(self, group_id: int, name: str) -> GroupView:
        members = tuple((user.id, user.name) for user in self.store.members(group_id))
        return GroupView(group_id, name, members, self.store.count_notes(group_id))

    def add_group(self, name: str) -> GroupView:
        group = self.store.add_group(name)
        return self._group_view(group.id, group.name)

    def delete_group(self, group_id: int) -> None:
        self.store.delete_group(group_id)

    def set_member(self, group_id: int, user_id: int, member: bool) -> None:
        if member:
            self.store.add_member(group_id, user_id)
        else:
            self.store.remove_member(group_id, user_id)

    def delete_user(self, user_id: int) -> None:
        self.store.delete_user(user_id)
        self.assistant.retriever.forget_owner(user_id)
        self._forget_templates()

    def run_calibration(self, modality: str, folder: Path, progress: Progress) -> CalibrationView:
        from kiosk.calibration.embed import encoder_name, load_embedder
        from kiosk.calibration.run import DataSpec, run_calibration

        if not folder.is_dir():
            raise DataError(f"data folder {folder} does not exist", "pick a folder with manifest.csv or pairs.txt")
        pairs = folder / "pairs.txt"
        spec = DataSpec(data_dir=folder, pairs_file=pairs if pairs.is_file() else None)
        progress(0.0, f"Loading the {modality} encoder…")
        # Its own encoder instance: the live one belongs to the verifier thread (inference is not re-entrant).
        embedder: Any = load_embedder(self.config, modality)
        if modality == "face" and embedder.model_sha256 != self.face.model_sha256:
            raise CalibrationError("the calibration encoder differs from the live one", "restart the kiosk")
        weights = {"embed": (0.0, 0.85), "score": (0.85, 0.95), "analyse": (0.95, 1.0)}

        def report(stage: str, done: int, total: int) -> None:
            low, high = weights.get(stage, (0.85, 0.95))
            fraction = low + (high - low) * (done / total if total else 1.0)
            label = {"embed": "Embedding images", "analyse": "Estimating densities"}.get(stage, stage.capitalize())
            progress(fraction, f"{label}: {done:,} of {total:,}")

        result = run_calibration(
            spec, embedder, encoder_name=encoder_name(self.config, modality), progress=report, command="admin screen"
        )
        calibration = result.calibration
        points = calibration.operating_points
        return CalibrationView(
            modality=modality,
            genuine=np.asarray(result.analysis.scores.genuine),
            impostor=np.asarray(result.analysis.scores.impostor),
            thresholds={rule: point.threshold for rule, point in points.items()},
            far={rule: point.far.value for rule, point in points.items()},
            frr={rule: point.frr.value for rule, point in points.items()},
            default_rule=calibration.rule,
            counts={"genuine": calibration.counts.genuine, "impostor": calibration.counts.impostor},
            eer=calibration.figures.eer,
            unresolved={rule: point.note for rule, point in points.items() if not point.resolved},
            payload=result,
        )

    def apply_calibration(self, result: CalibrationView, rule: str) -> float:
        from kiosk.calibration.active import calibration_path
        from kiosk.calibration.run import CalibrationResult

        if not isinstance(result.payload, CalibrationResult):
            raise CalibrationError("this calibration result cannot be applied", "run the calibration again")
        chosen = result.payload.with_rule(rule)  # type: ignore[arg-type]
        json_path, _png = chosen.apply(self.config.paths.calibration_dir)
        self.thresholds[result.modality] = chosen.threshold
        if self.assistant.thresholds is not None:
            self.assistant.thresholds[result.modality] = chosen.threshold
        if result.modality == "face":
            self.threshold_problem = None
        active = calibration_path(self.config, result.modality)
        if json_path.resolve() != active.resolve():
            log.warning("calibration written to %s; the configured active file is %s", json_path, active)
        return chosen.threshold

    def settings(self) -> AdminSettings:
        from kiosk.models.manifest import load_manifest

        choices = sorted(name for name, entry in load_manifest().models.items() if entry.role == "llm")
        current = self.config.llm.model
        if current not in choices:
            choices.append(current)
        return AdminSettings(current, tuple(choices), self.config.gate.policy)

    def apply_settings(self, llm_model: str, gate_policy: str) -> None:
        if gate_policy not in ("threshold", "best-match"):
            raise KioskError(f"unknown gate policy '{gate_policy}'", "use best-match or threshold")
        if llm_model != self.config.llm.model:
            from kiosk.llm.factory import create_llm

            candidate = self.config.model_copy(deep=True)
            candidate.llm.model = llm_model
            candidate.llm.gguf_path = None
            new_llm = create_llm(candidate)
            with self.llm.lock:
                old, self.llm.inner = self.llm.inner, new_llm
                self.llm.name = new_llm.name
            if self._owns_llm:
                close_llm(old)
            self._owns_llm = True
            self.config.llm.model = llm_model
        self.config.gate.policy = gate_policy  # type: ignore[assignment]

    def close(self) -> None:
        self.verifier.stop(stop_source=True)
        self.store.close()
        if self._owns_llm:
            close_llm(self.llm.inner)


def close_llm(llm: object) -> None:
    """Free a llama.cpp model now: left to interpreter shutdown, llama-cpp-python's __del__ prints a traceback."""
    close = getattr(llm, "close", None)
    if callable(close):
        try:
            close()
        except Exception:
            log.exception("closing the language model")
