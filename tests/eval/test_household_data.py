"""The household loader: the fixture loads with aware local times, and each kind of mistake is a DataError naming
the file and the entry."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from kiosk.errors import DataError
from kiosk.eval.household_data import load_household, load_households

FIXTURE = Path(__file__).parent / "household" / "kitchen_fixture.toml"


def _variant(tmp_path: Path, old: str, new: str, name: str = "kitchen_fixture") -> Path:
    text = FIXTURE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / f"{name}.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_fixture_loads_with_local_times_in_the_household_zone() -> None:
    household = load_household(FIXTURE)
    assert household.split == "dev" and [p.name for p in household.people] == ["Anna", "Tom", "Rose"]
    said = household.notes["n01"].said_at
    assert said.tzinfo is not None and said.utcoffset() == timedelta(hours=-5)  # Chicago, daylight time in October
    assert said.hour == 8 and said.minute == 15  # the wall time as written
    kinds = {q.kind for q in household.questions}
    assert {"yes-no", "either-or", "who", "list", "when", "what", "unanswerable", "other-private"} <= kinds
    assert household.notes["n02"].readable_by("anna", household.groups)
    assert not household.notes["n02"].readable_by("rose", household.groups)
    assert not household.notes["n06"].readable_by("anna", household.groups)
    assert household.notes["n07"].readable_by("rose", household.groups)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('timezone = "America/Chicago"', 'timezone = "Mars/Olympus"', "[household]: timezone"),
        ('split = "dev"', 'split = "train"', "split 'train'"),
        ('by = "tom"\nscope = "group:family"', 'by = "rose"\nscope = "group:family"', "note n02: rose is not a member"),
        ('scope = "public"', 'scope = "group:neighbours"', "note n07: scope 'group:neighbours'"),
        ('sensitive = "health"', 'sensitive = "medical"', "note n01: sensitive 'medical'"),
        ('said_at = "2026-10-05T08:15"', 'said_at = "2026-10-05T08:15-05:00"', "note n01: time"),
        ('said_at = "2026-10-05T08:15"', 'said_at = "5 Oct"', "note n01: time '5 Oct'"),
        ('asker = "anna"', 'asker = "ann"', "question q01: asker 'ann'"),
        ('kind = "yes-no"', 'kind = "boolean"', "question q01: kind 'boolean'"),
        ('evidence = ["n01"]', 'evidence = ["n99"]', "question q01: evidence 'n99'"),
        ('evidence = ["n05"]', 'evidence = ["n06"]', "question q06: evidence n06 is not readable by rose"),
        ('asked_at = "2026-10-20T09:00"', 'asked_at = "2026-10-01T09:00"', "question q01: asked before its evidence"),
        ('answers = ["Yes"]', "answers = []", "question q01: a yes-no question needs answers and evidence"),
        ('kind = "unanswerable"', 'kind = "what"', "question q07: a what question needs answers and evidence"),
        ('id = "n02"', 'id = "n01"', "note n01: id given twice"),
        ('harmful = ["No"]', 'harmful = "No"', "question q01: 'harmful' must be a list"),
        ('id = "kitchen_fixture"', 'id = "kitchen_other"', "is not the file name"),
    ],
)
def test_each_mistake_names_the_file_and_the_entry(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = _variant(tmp_path, old, new)
    with pytest.raises(DataError) as raised:
        load_household(path)
    assert raised.value.message.startswith("kitchen_fixture.toml: ")
    assert message in raised.value.message


def test_a_broken_toml_file_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("[household\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"broken\.toml: cannot read"):
        load_household(path)


def test_splits_are_chosen_by_the_file(tmp_path: Path) -> None:
    _variant(tmp_path, 'split = "dev"', 'split = "test"')
    assert [h.id for h in load_households(tmp_path, "test")] == ["kitchen_fixture"]
    assert [h.id for h in load_households(tmp_path, "all")] == ["kitchen_fixture"]
    with pytest.raises(DataError, match="no dev household"):
        load_households(tmp_path, "dev")
    with pytest.raises(DataError, match="unknown split"):
        load_households(tmp_path, "train")


def test_a_holdout_household_is_its_own_split_and_part_of_all(tmp_path: Path) -> None:
    _variant(tmp_path, 'split = "dev"', 'split = "holdout"')
    assert [h.split for h in load_households(tmp_path, "holdout")] == ["holdout"]
    assert [h.id for h in load_households(tmp_path, "all")] == ["kitchen_fixture"]
    with pytest.raises(DataError, match="no test household"):
        load_households(tmp_path, "test")
