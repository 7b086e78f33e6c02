"""Issue #34, point 8 (names): a name with a newline, 10,000 characters, stray spaces or a case-only twin of an
enrolled name is refused with one clear line by the one check the CLI, the kiosk's enrolment and the store use.

Before the fix "Colin " was stripped to "Colin" and silently re-enrolled Colin with another face, "colin" became a
second person next to "Colin", and a newline or 10,000 characters were stored as a name.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from kiosk.errors import KioskError, StoreError
from kiosk.identity.gallery import EmbeddedSample, enroll, select_templates
from kiosk.identity.names import InvalidName, look_alike, person_name
from kiosk.memory.sqlite_store import SqliteStore

SHA = "e" * 64
BAD_NAMES = {
    "newline": "Colin\nPowell",
    "trailing newline": "Colin\n",
    "10,000 characters": "C" * 10_000,
    "trailing space": "Colin ",
    "leading space": " Colin",
    "tab": "Colin\tPowell",
    "two spaces": "Colin  Powell",
    "zero-width space": "Co\u200blin",
    "bidi override": "\u202eniloC",
    "escape sequence": "\x1b[31mColin",
}


@pytest.mark.parametrize("name", list(BAD_NAMES.values()), ids=list(BAD_NAMES))
def test_bad_names_are_refused_with_one_line(name: str) -> None:
    with pytest.raises(InvalidName) as refused:
        person_name(name)
    line = refused.value.one_line()
    assert "\n" not in line and "\x1b" not in line and len(line) < 300
    assert refused.value.hint


def test_good_names_pass_and_are_nfc() -> None:
    assert person_name("Colin Powell") == "Colin Powell"
    assert person_name("Zoë O'Brien-Smith") == "Zoë O'Brien-Smith"
    decomposed = unicodedata.normalize("NFD", "José")
    assert decomposed != "José" and person_name(decomposed) == "José"
    assert person_name("李小龙") == "李小龙"


def test_look_alikes_differ_only_in_case_width_or_spacing() -> None:
    assert look_alike("colin", ["Colin", "Tony"]) == "Colin"
    assert look_alike("ＣＯＬＩＮ", ["Colin"]) == "Colin"  # full-width letters
    assert look_alike("Colin", ["Colin"]) is None  # the same name is a re-enrollment, not a twin
    assert look_alike("Colin P", ["Colin"]) is None


@pytest.fixture()
def store() -> SqliteStore:
    return SqliteStore(":memory:")


@pytest.mark.parametrize("name", list(BAD_NAMES.values()), ids=list(BAD_NAMES))
def test_the_store_refuses_bad_names(store: SqliteStore, name: str) -> None:
    with pytest.raises(StoreError):
        store.add_user(name)
    assert store.list_users() == []


def test_the_store_refuses_a_case_twin(store: SqliteStore) -> None:
    store.add_user("Colin")
    for twin in ("colin", "COLIN", "ＣＯＬＩＮ"):
        with pytest.raises(StoreError, match="only in case"):
            store.add_user(twin)
    assert [user.name for user in store.list_users()] == ["Colin"]


def _gallery(direction: int) -> Any:
    base = np.zeros(16, np.float32)
    base[direction] = 1.0
    samples = []
    for i in range(3):
        vector = base.copy()
        vector[8 + i] = 0.3
        samples.append(EmbeddedSample(f"s{i}", vector))
    return select_templates("face", SHA, samples, min_samples=3)


def test_a_trailing_space_no_longer_re_enrolls_someone_else(store: SqliteStore) -> None:
    colin = enroll(store, "Colin", _gallery(0), threshold=0.9)
    before = [t.vector.copy() for t in store.templates("face")]
    with pytest.raises(InvalidName, match="starts or ends with a space"):
        enroll(store, "Colin ", _gallery(1), threshold=0.9)
    with pytest.raises(StoreError, match="only in case"):
        enroll(store, "colin", _gallery(1), threshold=0.9)
    after = store.templates("face")
    assert [u.name for u in store.list_users()] == ["Colin"]
    assert {t.user_id for t in after} == {colin.user_id}
    np.testing.assert_array_equal(np.stack(before), np.stack([t.vector for t in after]))


def test_the_cli_refuses_bad_names_before_loading_any_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kiosk.cli import users as users_cli

    def no_models(*_: object) -> object:
        raise AssertionError("a model was loaded for a refused name")

    monkeypatch.setattr(users_cli, "load_embedder", no_models)
    monkeypatch.setenv("KIOSK_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KIOSK_CONFIG", raising=False)
    app = typer.Typer()
    users_cli.register(app)
    image = tmp_path / "a.png"
    for name in ("Colin\nPowell", "C" * 10_000, "Colin "):
        result = CliRunner().invoke(app, ["users", "enroll", name, "--face", str(image)])
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
        assert "C" * 100 not in result.output


def test_the_kiosk_enrolment_refuses_bad_names_first() -> None:
    from kiosk.app.enrolment import Enrolment

    enrolment = Enrolment(None, None, None, None)  # type: ignore[arg-type]  # nothing else is reached
    for name in BAD_NAMES.values():
        with pytest.raises(KioskError):
            enrolment.enroll(name, [])
