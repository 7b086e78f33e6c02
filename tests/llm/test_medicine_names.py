"""Whether a text names a medicine (kiosk.llm.medicine_names)."""

from __future__ import annotations

from kiosk.llm.medicine_names import medicine_words, names_a_medicine


def test_a_dose_or_a_medicine_s_name_names_a_medicine() -> None:
    assert names_a_medicine("Remember I take my amlodipine, five milligrams, every morning before breakfast.")
    assert names_a_medicine("The heart doctor added bisoprolol 2.5 mg in the morning.")
    assert names_a_medicine("Doctor put me on amoxicillin for the ear infection, three times a day for five days.")
    assert names_a_medicine("The eye doctor gave me drops, latanoprost. One drop in each eye at bedtime.")


def test_generic_endings_count_on_long_words_only() -> None:
    assert medicine_words("I'm starting ramipril and atorvastatin") == frozenset({"ramipril", "atorvastatin"})
    assert medicine_words("My birthday is in April, I'll be alone") == frozenset()
    assert not names_a_medicine("The wifi password, if the tablet drops off again, is BlueJay-4417.")
    assert not names_a_medicine("Remind me I take the pill at 9pm every night.")  # a kind, not a name
