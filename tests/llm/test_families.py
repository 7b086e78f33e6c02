"""Medicine and food families a note names, for the members a question names (kiosk.llm.families)."""

from __future__ import annotations

from kiosk.llm.families import families_of
from kiosk.stems import porter_stem


def test_a_member_names_its_family_as_notes_write_it() -> None:
    assert families_of(["can", "doris", "have", "amoxicillin"]) == {porter_stem("penicillin")}
    assert porter_stem("inflammatories") in families_of(["ibuprofen"])  # "no anti-inflammatories"
    assert porter_stem("opioids") in families_of(["codeine"])
    assert families_of(["paracetamol", "chest"]) == frozenset()


def test_a_food_names_the_family_an_allergy_note_names() -> None:
    assert families_of(["almond", "croissants"]) == {porter_stem("nuts")}
    assert porter_stem("shellfish") in families_of(["prawns"])
    assert porter_stem("dairy") in families_of(["cheese"])
    assert families_of(["peanut", "butter", "cookies"]) == frozenset()  # a peanut is no tree nut
