"""Which notes an answer uses when a prompt was prefilled while the question was typed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kiosk.memory.note import Note
from kiosk.prepared import keep_prepared

START = datetime(2024, 1, 1, tzinfo=UTC)


def note(number: int, owner: int = 1, day: int | None = None) -> Note:
    when = START + timedelta(days=number if day is None else day)
    return Note(number, owner, "face", f"note {number}", when)


def ids(notes: list[Note] | None) -> list[int] | None:
    return None if notes is None else [int(n.id or 0) for n in notes]


def everyone(_note: Note) -> bool:
    return True


def test_prepared_notes_come_first_as_prefilled_then_the_new_ones_oldest_first() -> None:
    prepared = [note(2), note(5), note(7), note(9)]
    final = [note(9), note(1), note(5), note(2), note(8)]  # retrieval order, not chronological
    kept = keep_prepared(prepared, final, lambda n: n, everyone)
    assert ids(kept) == [2, 5, 7, 9, 1, 8]  # the prefilled block is a prefix; every final note is there


def test_nothing_kept_without_prepared_or_final_notes_or_with_too_little_in_common() -> None:
    assert keep_prepared([], [note(1)], lambda n: n, everyone) is None
    assert keep_prepared([note(1)], [], lambda n: n, everyone) is None  # e.g. the final retrieval abstained
    # one of three final notes was prepared: the typed words were about something else
    assert keep_prepared([note(1), note(2)], [note(1), note(3), note(4)], lambda n: n, everyone) is None
    # ... unless every kept note is a final one: then only the order changes
    assert ids(keep_prepared([note(1)], [note(1), note(3), note(4)], lambda n: n, everyone)) == [1, 3, 4]
    assert ids(keep_prepared([note(1), note(2)], [note(1), note(3)], lambda n: n, everyone)) == [1, 2, 3]


def test_a_prepared_note_the_final_gate_does_not_admit_is_left_out() -> None:
    prepared = [note(1), note(2, owner=2), note(3)]
    final = [note(1), note(3), note(4)]
    kept = keep_prepared(prepared, final, lambda n: n, lambda n: n.owner_id == 1)
    assert ids(kept) == [1, 3, 4]
    # not admitted: gone before anything else is decided; the final note left is kept first
    kept = keep_prepared(
        [note(2, owner=2), note(5)], [note(1), note(5), note(6)], lambda n: n, lambda n: n.owner_id == 1
    )
    assert ids(kept) == [5, 1, 6]
    # not admitted, and the other prepared note is not a final one: too little in common once it is gone
    assert (
        keep_prepared([note(2, owner=2), note(7)], [note(1), note(5), note(6)], lambda n: n, lambda n: n.owner_id == 1)
        is None
    )


def test_the_cap_cuts_the_prepared_block_before_the_extra_note_it_cannot_afford() -> None:
    prepared = [note(2), note(3), note(5), note(7), note(9)]  # 3 and 7 are not among the final notes
    final = [note(9), note(5), note(2), note(8)]
    assert ids(keep_prepared(prepared, final, lambda n: n, everyone)) == [2, 3, 5, 7, 9, 8]
    assert ids(keep_prepared(prepared, final, lambda n: n, everyone, max_extra=1)) == [2, 3, 5, 8, 9]
    # none extra: the block stops before note 3; exactly the final notes, the prefilled one first
    assert ids(keep_prepared(prepared, final, lambda n: n, everyone, max_extra=0)) == [2, 5, 8, 9]
    assert ids(keep_prepared([note(2), note(5), note(9), note(3)], final, lambda n: n, everyone, max_extra=0)) == [
        2,
        5,
        9,
        8,
    ]
    # the first prepared note is already one the final retrieval did not choose: nothing to keep
    assert keep_prepared([note(3), note(2)], final, lambda n: n, everyone, max_extra=0) is None
