"""The asker's own medicine notes under the relevance floor, on a household of the question set with the real
palm identities and text encoder."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiosk.config import KioskConfig
from kiosk.eval.household_data import load_household
from kiosk.eval.household_store import Biometrics, household_at_terminal

HOUSEHOLD = Path(__file__).resolve().parents[2] / "bench" / "data" / "household" / "kitchen_lindqvist.toml"
pytestmark = [pytest.mark.real_models, pytest.mark.real_data]


def test_my_tablets_are_answered_from_my_own_medicine_notes_only(
    config: KioskConfig, data_dir: Path, text_encoder: object
) -> None:
    config.paths.eval_data_dir = data_dir
    household = load_household(HOUSEHOLD)
    question = next(q for q in household.questions if q.question == "Which tablets am I on now?")
    with household_at_terminal(
        config, household, Biometrics.load(config, "palm"), text_encoder, None, notes_up_front=False
    ) as terminal:
        terminal.remember_until(question.asked_at)
        terminal.ask_at(question.asked_at)
        _, retrieval, _ = terminal.assistant.retrieve(question.question, terminal.probes["erik"])
        kept = {terminal.note_ids[int(item.note.id or 0)] for item in retrieval.notes}
        _, other, _ = terminal.assistant.retrieve("What's the name of my dentist?", terminal.probes["erik"])

    # ramipril (0.22) and atorvastatin (0.24) score under the floor; the alarm code and a sleepover beside them go
    assert not retrieval.below_relevance_floor and max(item.similarity for item in retrieval.notes) < 0.4125
    assert {"n04", "n22"} <= kept and kept <= {"n04", "n22", "n23"}
    assert other.notes == [] and other.below_relevance_floor  # no medicine asked: the floor decides alone
