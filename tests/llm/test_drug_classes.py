"""Medicine families a note names, for the members a question names (kiosk.llm.drug_classes)."""

from __future__ import annotations

from kiosk.llm.drug_classes import families_of
from kiosk.stems import porter_stem


def test_a_member_names_its_family_as_notes_write_it() -> None:
    assert families_of(["can", "doris", "have", "amoxicillin"]) == {porter_stem("penicillin")}
    assert porter_stem("inflammatories") in families_of(["ibuprofen"])  # "no anti-inflammatories"
    assert porter_stem("opioids") in families_of(["codeine"])
    assert families_of(["paracetamol", "chest"]) == frozenset()
