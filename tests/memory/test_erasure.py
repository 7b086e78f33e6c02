"""Erasure for real: after a note delete or forget-me, the raw database file, its WAL and -shm hold no trace.

Each test first checks that the same scan DOES find the text and template bytes before the deletion in a
store kept in clear (the control), so a scan that could never find anything cannot pass.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kiosk.memory import SqliteStore
from kiosk.memory.lexical import query_terms
from kiosk.security.sealing import MasterKey, new_key

from .builders import make_note, unit

SECRET = "the spare key hides under the BLUE-HERON flowerpot"
TOKEN = b"heron"  # in what the lexical index stores (the owner-prefixed stem "o<id>xheron")


def raw_files(path: Path) -> dict[str, bytes]:
    files = {p.name: p.read_bytes() for p in path.parent.glob(path.name + "*") if not p.name.endswith(".bak")}
    assert path.name in files
    return files


def found(path: Path, needle: bytes) -> list[str]:
    return [name for name, data in raw_files(path).items() if needle in data]


def populated(path: Path, sealed: bool) -> tuple[SqliteStore, int, int, np.ndarray]:
    store = SqliteStore(path, master_key=MasterKey(new_key(), "test") if sealed else None)
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    template = unit(11, dim=128)
    store.set_templates(ann, "face", template[None, :], "sha")
    store.set_templates(bob, "face", unit(12, dim=128)[None, :], "sha")
    note = store.add_note(make_note(ann, SECRET, keywords=["BLUE-HERON"]))
    other = store.add_note(make_note(ann, "Ann also likes tea", seed=1))
    store.add_link(int(note.id or 0), int(other.id or 0), "related")
    note.context = "about the BLUE-HERON flowerpot"
    store.update_note(note, "evolve")  # history before/after carries the text too
    store.add_note(make_note(bob, "Bob keeps his own notes", seed=2))
    return store, ann, int(note.id or 0), template


@pytest.mark.parametrize("sealed", [False, True], ids=["clear", "sealed"])
def test_forget_me_leaves_no_text_template_or_token_in_db_wal_or_shm(tmp_path: Path, sealed: bool) -> None:
    path = tmp_path / "memory.db"
    store, ann, _, template = populated(path, sealed)
    template_bytes = template.tobytes()[:64]
    assert found(path, TOKEN), "control: the lexical index holds the token before deletion"
    if not sealed:
        assert found(path, b"BLUE-HERON") and found(path, template_bytes), "control: the scan sees clear data"
    else:
        assert not found(path, b"BLUE-HERON") and not found(path, template_bytes)

    store.delete_user(ann)

    for needle in (b"BLUE-HERON", SECRET.encode(), TOKEN, template_bytes, b"Ann also likes tea"):
        assert found(path, needle) == [], needle
    assert store.list_users()[0].name == "Bob" and store.count_notes() == 1
    assert store._query("SELECT count(*) FROM links")[0][0] == 0
    assert store._query("SELECT count(*) FROM history")[0][0] == 0
    assert store._query("SELECT count(*) FROM user_keys")[0][0] == (1 if sealed else 0)
    assert store.lexical([ann], "heron", 10) == []
    assert store._query("PRAGMA freelist_count")[0][0] == 0  # free pages given back, not just zeroed
    assert store.integrity_check() == "ok"
    store.close()


def test_deleting_one_note_erases_it_and_keeps_the_others(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store, ann, note_id, _ = populated(path, sealed=False)
    assert found(path, b"BLUE-HERON")
    store.delete_note(note_id)
    assert found(path, b"BLUE-HERON") == [] and found(path, TOKEN) == []
    assert found(path, b"Ann also likes tea")  # the neighbour is intact
    assert [n.content for n in store.list_notes(ann)] == ["Ann also likes tea"]
    assert store.links(note_id) == [] and store.history(note_id) == []
    assert len(store.lexical([ann], "tea", 10)) == 1
    store.close()


@pytest.mark.real_data
@pytest.mark.real_models
def test_forget_me_on_real_locomo_turns_in_a_sealed_store(tmp_path: Path, data_dir: Path, text_encoder: Any) -> None:
    from kiosk.memory.ingest import Turn, conversation_turns, load_conversations

    samples = load_conversations(data_dir / "locomo" / "locomo10.json")
    groups = {
        name: [t.text for t in conversation_turns(samples[i], i)[1] if isinstance(t, Turn)][:count]
        for i, (name, count) in enumerate((("first", 60), ("second", 20)))
    }
    path = tmp_path / "memory.db"
    store = SqliteStore(path, master_key=MasterKey(new_key(), "test"))
    owners = {}
    for name, texts in groups.items():
        owners[name] = store.add_user(name).id
        for text, vector in zip(texts, text_encoder.encode(texts), strict=True):
            store.add_note(replace(make_note(owners[name], text), embedding=vector.astype(np.float32)))
    template = unit(5, dim=512)
    store.set_templates(owners["first"], "face", template[None, :], "sha")

    def words(texts: list[str]) -> set[str]:  # the index holds porter stems: compare those
        return {w for t in texts for w in query_terms(store._stem, t) if len(w) >= 8 and re.fullmatch("[a-z]+", w)}

    only_first = sorted(words(groups["first"]) - words(groups["second"]))
    store.checkpoint()
    assert any(found(path, w.encode()) for w in only_first), "control: the lexical index holds real tokens"
    assert not any(found(path, t.encode()) for t in groups["first"] if len(t) > 30)  # sealed: no clear text
    store.delete_user(owners["first"])
    store.close()
    data = b"".join(raw_files(path).values())
    assert [w for w in only_first if w.encode() in data] == []
    assert template.tobytes()[:64] not in data
