"""Store.lexical on both backends: keyword search restricted to the given owners, best first."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from kiosk.memory import Note, Store
from kiosk.memory.note import EMBEDDING_DIM

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _note(owner: int, content: str, keywords: list[str] | None = None) -> Note:
    vector = np.zeros(EMBEDDING_DIM, dtype=np.float32)
    vector[0] = 1.0
    return Note(
        id=None,
        owner_id=owner,
        modality="face",
        content=content,
        timestamp=WHEN,
        keywords=keywords or [],
        embedding=vector,
    )


def test_lexical_is_restricted_to_the_owners_and_ranks_matches(store: Store) -> None:
    ann, bob = store.add_user("Ann").id, store.add_user("Bob").id
    pottery = store.add_note(_note(ann, "I signed up for a pottery class on Tuesdays.")).id
    store.add_note(_note(ann, "We went hiking last weekend."))
    tagged = store.add_note(_note(ann, "It was relaxing.", keywords=["pottery"])).id
    bobs = store.add_note(_note(bob, "My pottery class starts soon.")).id

    found = [note_id for note_id, _ in store.lexical([ann], "When is Ann's pottery class?", 10)]
    assert found[0] == pottery and tagged in found and bobs not in found
    assert [note_id for note_id, _ in store.lexical([bob], "pottery", 10)] == [bobs]
    assert store.lexical([ann], "the and of", 10) == []  # stop words only: nothing to look for
    assert store.lexical([], "pottery", 10) == []
    assert len(store.lexical([ann], "pottery class hiking", 1)) == 1
