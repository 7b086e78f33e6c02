"""BM25 that weighs a word the same whichever owner of the pool holds it.

The lexical index prefixes every term with its note's owner (kiosk.memory.lexical), so FTS5's own bm25() counts
a word's notes within one owner only: in a pool of a person and her family group, "cake" in the group's one note
weighed more (3.79) than the same word in one of her ten notes (2.47), and the group note outranked her own
equally relevant note. For a pool of several owners the score here is FTS5's BM25 (k1 1.2, b 0.75, the table's
row count and average length) with each word's note count summed over the pool's owners; a pool of one owner
keeps FTS5's own bm25(), which is then the same score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import apsw

from kiosk.memory.lexical import owner_prefix
from kiosk.memory.sql.tx import Tx

FUNCTION = "pool_bm25"
"""The FTS5 auxiliary function: pool_bm25(note_fts, hits_1, ..., hits_m), hits_i the pool's notes holding term i."""
VOCAB_TABLE = "temp.note_fts_vocab"
_K1 = 1.2
_B = 0.75
_MIN_IDF = 1e-6  # as FTS5's bm25(): a word in more than half the notes still counts a little


def register(conn: apsw.Connection) -> None:
    """Make pool_bm25() callable on `conn`."""
    conn.register_fts5_function(FUNCTION, _pool_bm25)


def pool_hits(tx: Tx, owners: Sequence[int], terms: Sequence[str]) -> list[int]:
    """For each term, how many notes of `owners` hold it (FTS5's row vocabulary of the owner-prefixed terms)."""
    tx.run(f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCAB_TABLE} USING fts5vocab(main, note_fts, row)")
    hits = dict.fromkeys(terms, 0)
    for owner in owners:
        prefix = owner_prefix(owner)
        keyed = {prefix + term: term for term in terms}
        marks = ", ".join("?" * len(keyed))
        for term, docs in tx.rows(f"SELECT term, doc FROM {VOCAB_TABLE} WHERE term IN ({marks})", list(keyed)):
            hits[keyed[term]] += int(docs)
    return [hits[term] for term in terms]


def _pool_bm25(api: apsw.FTS5ExtensionApi, *hits: apsw.SQLiteValue) -> float:
    rows = max(int(api.row_count), 1)
    average_length = api.column_total_size(-1) / rows or 1.0
    length = api.column_size(-1)
    score = 0.0
    for phrase, hit_count in enumerate(hits):
        frequency = sum(len(offsets) for offsets in api.phrase_locations(phrase))
        if frequency:
            notes_with_term = cast(int, hit_count)  # pool_hits' counts, bound by the lexical query
            idf = math.log((rows - notes_with_term + 0.5) / (notes_with_term + 0.5))
            if idf <= 0.0:
                idf = _MIN_IDF
            # The same operations in the same order as FTS5's bm25() (fts5_aux.c), so equal inputs give equal bits.
            score += idf * ((frequency * (_K1 + 1.0)) / (frequency + _K1 * (1 - _B + _B * length / average_length)))
    return score
