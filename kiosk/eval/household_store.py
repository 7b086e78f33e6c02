"""One household at the terminal, built through the product path in a fresh store of its own.

Every person is enrolled with a benchmark biometric identity (Tongji palms by default, as `kiosk eval locomo`
binds them): one image is their template, another is the capture they show when they speak to the terminal and
when they ask. Groups are made with their members; every note is remembered by its author through
`Assistant.remember` at the moment it was said, with the kiosk's construction (ui.remember_construction). The
benchmarks that look only at retrieval remember every note up front; `kiosk eval household` remembers them as time
passes (HouseholdAtTerminal.remember_until), so a question never sees a note said after it was asked, as at a real
terminal.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

from kiosk.config import KioskConfig
from kiosk.eval.assignments import IdentityBinding, benchmark_dir, bind_identities, read_identity_images
from kiosk.eval.conditions import benchmark_probe
from kiosk.eval.household_data import Household, HouseNote
from kiosk.eval.models import calibrated_threshold, capture_refusal, embed_benchmark_image, load_embedder
from kiosk.identity.probe import Probe
from kiosk.local_time import TerminalClock
from kiosk.memory.scopes import parse_scope
from kiosk.retrieval.tuning import DEFAULT_TUNING, RetrievalTuning
from kiosk.security.backoff import no_backoff

Modality = Literal["palm", "face"]


@dataclass
class Biometrics:
    """The benchmark identities, their embedder and the calibrated tau: loaded once for every household."""

    modality: Modality
    embedder: Any
    images: dict[str, list[str]]
    image_root: Path
    threshold: float
    seed: int = 0

    @classmethod
    def load(cls, config: KioskConfig, modality: Modality, seed: int = 0) -> Biometrics:
        from kiosk.calibration.active import active_calibration

        embedder = load_embedder(config, modality)
        data_dir = config.paths.eval_data_dir
        calibration = active_calibration(config, modality, embedder.model_sha256)
        threshold, _ = calibrated_threshold(calibration, None)
        return cls(
            modality,
            embedder,
            read_identity_images(data_dir, modality),
            benchmark_dir(data_dir, modality),
            threshold,
            seed,
        )

    def bind(self, household: Household) -> list[IdentityBinding]:
        users = [f"{household.id}:{person.id}" for person in household.people]
        refusal = capture_refusal(self.embedder, self.modality, self.image_root)
        return bind_identities(users, self.images, self.seed, self.modality, refusal=refusal)

    def embed(self, relative: str) -> Any:
        return embed_benchmark_image(self.embedder, self.modality, self.image_root / relative)


@dataclass
class HouseholdAtTerminal:
    """A household's store and assistant, with what each person shows the terminal."""

    household: Household
    assistant: Any
    store: Any
    probes: dict[str, Probe]
    """Person id -> the capture they show when they speak or ask (not their enrolment image)."""
    note_ids: dict[int, str] = field(default_factory=dict)
    """Store note id -> the household's note id."""
    refused_notes: list[str] = field(default_factory=list)
    """Notes the terminal did not store because the gate did not verify their author."""
    bindings: list[IdentityBinding] = field(default_factory=list)
    construction: str = "fast"
    """How the terminal builds a note (ui.remember_construction)."""
    unsaid: list[HouseNote] = field(default_factory=list)
    """The household's notes not yet said to the terminal, oldest first."""

    def ask_at(self, moment: datetime) -> None:
        """Stop the terminal's clock at `moment`, in the household's zone (decay and relative dates read it)."""
        self.assistant.clock = TerminalClock(ZoneInfo(self.household.timezone), fixed=moment)

    def remember_until(self, moment: datetime | None = None) -> None:
        """Remember, each at the moment it was said, every note not yet said that was said by `moment` (every one
        when None)."""
        while self.unsaid and (moment is None or self.unsaid[0].said_at <= moment):
            note = self.unsaid.pop(0)
            self.ask_at(note.said_at)
            stored = self.assistant.remember(
                note.text,
                self.probes[note.by],
                when=note.said_at,
                mode=self.construction,
                scope=parse_scope(note.scope),
            )
            if stored is None:
                self.refused_notes.append(note.id)
            else:
                self.note_ids[int(stored)] = note.id


@contextmanager
def household_at_terminal(
    config: KioskConfig,
    household: Household,
    biometrics: Biometrics,
    text_encoder: Any,
    llm: Any,
    tuning: RetrievalTuning = DEFAULT_TUNING,
    *,
    notes_up_front: bool = True,
) -> Iterator[HouseholdAtTerminal]:
    """The household enrolled in a temporary store (removed afterwards), its notes remembered when
    `notes_up_front`; otherwise the caller lets time pass with HouseholdAtTerminal.remember_until."""
    from kiosk.app.build import build_assistant
    from kiosk.memory.sqlite_store import SqliteStore

    config = config.model_copy(deep=True)
    config.ui.time_zone = household.timezone  # the terminal stands in the household's zone
    work = Path(tempfile.mkdtemp(prefix=f"household-{household.id}-"))
    store = SqliteStore(work / "store.db")
    try:
        bindings = biometrics.bind(household)
        sha = biometrics.embedder.model_sha256
        user_ids: dict[str, int] = {}
        probes: dict[str, Probe] = {}
        for person, binding in zip(household.people, bindings, strict=True):
            user = store.add_user(person.name)
            user_ids[person.id] = int(user.id)
            store.set_templates(user.id, biometrics.modality, biometrics.embed(binding.gallery_image)[None, :], sha)
            probes[person.id] = benchmark_probe(biometrics.embed(binding.probe_image), biometrics.modality, sha)
        for group in household.groups.values():
            made = store.add_group(group.id)
            for member in group.members:
                store.add_member(made.id, user_ids[member])
        # Verifying the same people hundreds of times is no attack: the terminal's back-off stays out of it.
        thresholds: dict[str, float] = {biometrics.modality: biometrics.threshold}
        assistant = build_assistant(config, store, text_encoder, llm, thresholds=thresholds, backoff=no_backoff())
        if tuning != assistant.retriever.tuning:
            assistant.retriever = assistant.retriever.retuned(tuning)
        terminal = HouseholdAtTerminal(
            household,
            assistant,
            store,
            probes,
            bindings=bindings,
            construction=config.ui.remember_construction,
            unsaid=sorted(household.notes.values(), key=lambda n: (n.said_at, n.id)),
        )
        if notes_up_front:
            terminal.remember_until()
        yield terminal
    finally:
        store.close()
        shutil.rmtree(work, ignore_errors=True)
