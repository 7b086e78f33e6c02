"""The admin screen's work: people, groups, a note's sensitivity mark, calibrating tau on a labelled folder, and
the LLM / gate policy."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kiosk.app.live import LiveCamera
from kiosk.app.memories import forget_cached_person
from kiosk.app.views import AdminSettings, CalibrationView, GroupView, Progress, UserView
from kiosk.assistant import Assistant
from kiosk.config import KioskConfig
from kiosk.errors import CalibrationError, DataError, KioskError
from kiosk.llm.locked import LockedLLM, close_llm
from kiosk.memory.forgetting import FADED_BELOW, FadedNote, faded_by_owner
from kiosk.memory.sensitivity import validate_category

if TYPE_CHECKING:
    from kiosk.calibration.run import CalibrationResult

log = logging.getLogger("kiosk.app")

GATE_POLICIES = ("best-match", "threshold")
# Calibration progress: the share of the bar each stage takes.
CALIBRATION_STAGES = {"embed": (0.0, 0.85), "score": (0.85, 0.95), "analyse": (0.95, 1.0)}


class Admin:
    def __init__(
        self, config: KioskConfig, assistant: Assistant, live: LiveCamera, llm: LockedLLM, *, owns_llm: bool
    ) -> None:
        self.config = config
        self.assistant = assistant
        self.store = assistant.store
        self.live = live
        self.llm = llm
        self.owns_llm = owns_llm  # a caller's LLM (tests, benchmarks) stays open for its next user

    # --- people and groups --------------------------------------------------------------------------
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

    def delete_user(self, user_id: int) -> None:
        self.store.delete_user(user_id)
        forget_cached_person(self.assistant, user_id)
        self.live.forget_templates()

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

    def mark_note(self, note_id: int, sensitivity: str | None) -> str | None:
        """An admin sets any note's sensitive category (None or 'none': not sensitive), without reading it; the
        mark stands against automatic rewrites, and the owner's cached retrieval results are dropped."""
        note = self.store.mark_sensitivity(note_id, validate_category(sensitivity), "admin")
        self.assistant.retriever.forget_owner(note.owner_id)
        return note.sensitivity

    def faded_notes(self, below: float = FADED_BELOW) -> dict[str, list[FadedNote]]:
        """What faded, by person (and group, public): each note's dates, uses and strength, never its text; an
        archived note is listed too (its owner still sees it in "my memories" and can restore it)."""
        return faded_by_owner(self.store, self.assistant.clock(), self.assistant.decay, below)

    # --- calibration --------------------------------------------------------------------------------
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
        if modality == "face" and embedder.model_sha256 != self.live.face.model_sha256:
            raise CalibrationError("the calibration encoder differs from the live one", "restart the kiosk")

        def report(stage: str, done: int, total: int) -> None:
            low, high = CALIBRATION_STAGES.get(stage, (0.85, 0.95))
            fraction = low + (high - low) * (done / total if total else 1.0)
            label = {"embed": "Embedding images", "analyse": "Estimating densities"}.get(stage, stage.capitalize())
            progress(fraction, f"{label}: {done:,} of {total:,}")

        result = run_calibration(
            spec, embedder, encoder_name=encoder_name(self.config, modality), progress=report, command="admin screen"
        )
        return _calibration_view(modality, result)

    def run_site_calibration(self, modality: str, target_far: float, progress: Progress) -> CalibrationView:
        """Propose tau for `target_far` from the enrolled people's own frames and the shipped impostor cohort."""
        from kiosk.calibration.embed import encoder_name
        from kiosk.calibration.schema import EncoderInfo
        from kiosk.calibration.site import calibrate_site, describe_proposal

        progress(0.0, f"Scoring the enrolled {modality} frames…")
        templates = self.store.templates(modality)
        encoder = self.live.face if modality == "face" else self.live.palm
        if encoder is None:
            raise CalibrationError(f"this terminal has no {modality} encoder", "pick the modality it uses")
        sha = encoder.model_sha256
        site = calibrate_site(
            self.config,
            templates,
            modality=modality,
            encoder=EncoderInfo(name=encoder_name(self.config, modality), sha256=sha),
            target_far=target_far,
            command="admin screen (site)",
        )
        progress(1.0, "Done")
        view = _calibration_view(modality, site.result)
        return replace(view, default_rule="far", notes=tuple(describe_proposal(site.proposal)))

    def apply_calibration(self, result: CalibrationView, rule: str) -> float:
        from kiosk.calibration.active import calibration_path
        from kiosk.calibration.run import CalibrationResult
        from kiosk.calibration.site import active_threshold_or_none

        if not isinstance(result.payload, CalibrationResult):
            raise CalibrationError("this calibration result cannot be applied", "run the calibration again")
        chosen = result.payload.with_rule(rule)  # type: ignore[arg-type]
        if chosen.calibration.benchmark == "site":
            calibrated = active_threshold_or_none(self.config, result.modality, chosen.calibration.encoder.sha256)
            if calibrated is not None and chosen.threshold < calibrated:
                raise CalibrationError(
                    f"the site proposal {chosen.threshold:.4f} is under the active calibration's tau {calibrated:.4f}",
                    f"only `kiosk calibrate {result.modality} --site --apply --below-calibration` lowers the gate",
                )
        json_path, _png = chosen.apply(self.config.paths.calibration_dir)
        if self.assistant.thresholds is not None:
            self.assistant.thresholds[result.modality] = chosen.threshold
        if result.modality == "face":
            self.live.threshold_problem = None
        active = calibration_path(self.config, result.modality)
        if json_path.resolve() != active.resolve():
            log.warning("calibration written to %s; the configured active file is %s", json_path, active)
        return chosen.threshold

    # --- settings -----------------------------------------------------------------------------------
    def settings(self) -> AdminSettings:
        from kiosk.models.manifest import load_manifest

        choices = sorted(name for name, entry in load_manifest().models.items() if entry.role == "llm")
        current = self.config.llm.model
        if current not in choices:
            choices.append(current)
        return AdminSettings(current, tuple(choices), self.config.gate.policy, GATE_POLICIES)

    def apply_settings(self, llm_model: str, gate_policy: str) -> None:
        if gate_policy not in GATE_POLICIES:
            raise KioskError(f"unknown gate policy '{gate_policy}'", "use best-match or threshold")
        if llm_model != self.config.llm.model:
            from kiosk.llm.factory import create_llm

            candidate = self.config.model_copy(deep=True)
            candidate.llm.model = llm_model
            candidate.llm.gguf_path = None
            old = self.llm.swap(create_llm(candidate))
            if self.owns_llm:
                close_llm(old)
            self.owns_llm = True
            self.config.llm.model = llm_model
        self.config.gate.policy = gate_policy  # type: ignore[assignment]


def _calibration_view(modality: str, result: CalibrationResult) -> CalibrationView:
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
