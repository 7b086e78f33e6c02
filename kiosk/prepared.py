"""The notes of the prompt prefilled while the question was typed, kept in the answer at "send".

Retrieval on the words typed so far almost never returns the same top K as on the whole question (on 50
LoCoMo questions typed up to their last word: the same set for 1 in 10, bench/results/latency_50_prompt_tokens.md),
and the notes are listed oldest first, so the first differing note ends the prefix the prefilled context
shares with the final prompt: most of the notes were evaluated again after "send". Keeping the prepared
notes, in the order they were prefilled, and adding the final retrieval's other notes after them makes the
whole prefilled block a prefix of the final prompt: only the new notes and the question are evaluated
after "send". Every note the final retrieval chose is still in the prompt; the prepared ones only stay when
the final gate admits them, and notes the final retrieval did not choose only when the typed words were about
the same thing (at least half of the final notes were among them).

The prepared notes the final retrieval did not choose ("extra" notes) are the price: a 0.5B model reads a
longer, partly off-topic list worse. `max_extra` caps them by cutting the prepared block after its last
affordable note, so what is kept is still a prefix of what was prefilled (max_extra=0: exactly the final
retrieval's notes, the prefilled ones first).

Listing the prefilled notes most relevant first would make the shared block longer (no extra note: 62 % of
the final notes reused instead of 30 %), but the 0.5B model answers worse from notes out of date order
(bench/results/keep_prepared_f1.md), so they are prefilled oldest first like every answer prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from kiosk.memory.note import Note

Item = TypeVar("Item")


def keep_prepared(
    prepared: Sequence[Item],
    final: Sequence[Item],
    note_of: Callable[[Item], Note],
    admitted: Callable[[Note], bool],
    max_extra: int | None = None,
) -> list[Item] | None:
    """The answer's notes in prompt order: the admitted prepared notes as prefilled (up to the first one
    that would exceed `max_extra` notes outside the final retrieval; None: no cap), then the final
    retrieval's other notes oldest first. None when the prepared notes should not be kept (nothing
    prepared, nothing finally retrieved, or extra notes with too little in common): the caller uses `final`."""
    if not prepared or not final:
        return None
    final_ids = {note_of(item).id for item in final}
    kept: list[Item] = []
    extra = 0
    for item in prepared:
        note = note_of(item)
        if not admitted(note):
            continue
        if note.id not in final_ids:
            if max_extra is not None and extra >= max_extra:
                break
            extra += 1
        kept.append(item)
    if not kept:
        return None
    kept_ids = {note_of(item).id for item in kept}
    shared = sum(1 for item in final if note_of(item).id in kept_ids)
    if extra and 2 * shared < len(final):
        return None
    added = sorted(
        (item for item in final if note_of(item).id not in kept_ids),
        key=lambda item: (note_of(item).timestamp, note_of(item).id or 0),
    )
    return kept + added
