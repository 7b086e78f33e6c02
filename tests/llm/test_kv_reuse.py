"""The reuse plan, applied to a simulated KV cache that enforces llama.cpp's rules: memory operations act on
every cell of a sequence in a position range, and a sequence only evaluates right after its last position."""

from __future__ import annotations

import random

import pytest

from kiosk.llm.kv_reuse import Evaluate, Run, plan_reuse, reusable_runs

PARKING = 1


class SimulatedCache:
    """Cells of (token, position, sequences), with llama_memory_seq_rm / seq_cp / seq_add and decode."""

    def __init__(self, tokens: list[int]) -> None:
        self.cells: list[tuple[int, int, set[int]]] = [(token, pos, {0}) for pos, token in enumerate(tokens)]
        self.evaluated = 0

    def _in(self, seq: int, start: int, end: int) -> list[int]:
        return [i for i, (_, pos, seqs) in enumerate(self.cells) if seq in seqs and start <= pos < end]

    def seq_rm(self, seq: int, start: int, end: int) -> None:
        for i in self._in(seq, start, end):
            self.cells[i][2].discard(seq)
        self.cells = [cell for cell in self.cells if cell[2]]

    def seq_cp(self, source: int, target: int, start: int, end: int) -> None:
        for i in self._in(source, start, end):
            self.cells[i][2].add(target)

    def seq_add(self, seq: int, start: int, end: int, shift: int) -> None:
        for i in self._in(seq, start, end):
            token, pos, seqs = self.cells[i]
            assert seqs == {seq}, "a shifted cell is shared with another sequence"
            self.cells[i] = (token, pos + shift, seqs)

    def decode(self, tokens: list[int], start: int, end: int) -> None:
        last = max((pos for _, pos, seqs in self.cells if 0 in seqs), default=-1)
        assert start == last + 1, f"llama.cpp refuses a batch at {start} after position {last}"
        self.cells += [(tokens[pos], pos, {0}) for pos in range(start, end)]
        self.evaluated += end - start

    def sequence(self, seq: int) -> list[tuple[int, int]]:
        return sorted((pos, token) for token, pos, seqs in self.cells if seq in seqs)


def apply(evaluated: list[int], tokens: list[int], min_tokens: int) -> SimulatedCache:
    """What kiosk.llm.llamacpp.LlamaCppLLM._reuse_moved_runs does, on the simulated cache."""
    cache = SimulatedCache(evaluated)
    plan = plan_reuse(evaluated, tokens, min_tokens)
    assert plan is not None
    for start, end in plan.removed:
        cache.seq_rm(0, start, end)
    for run in plan.parked:
        cache.seq_cp(0, PARKING, run.source, run.source + run.length)
        cache.seq_rm(0, run.source, run.source + run.length)
    for run in plan.moves:
        cache.seq_add(PARKING, run.source, run.source + run.length, run.shift)
    for step in plan.steps:
        if isinstance(step, Evaluate):
            cache.decode(tokens, step.start, step.end)
        else:
            cache.seq_cp(PARKING, 0, step.target, step.target + step.length)
            cache.seq_rm(PARKING, step.target, step.target + step.length)
    assert cache.evaluated == plan.evaluated_tokens
    assert plan.reused_tokens + plan.evaluated_tokens == len(tokens) - 1
    return cache


def test_a_plain_continuation_is_left_to_prefix_reuse() -> None:
    assert plan_reuse([1, 2, 3], [1, 2, 3, 4, 5], 2) is None
    assert plan_reuse([], [1, 2, 3], 2) is None


def test_a_dropped_note_moves_the_later_notes_left() -> None:
    system, dropped, later, question = [1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23, 24], [30, 31, 32]
    evaluated = system + dropped + later + [40]
    tokens = system + later + question
    plan = plan_reuse(evaluated, tokens, 4)
    assert plan is not None
    assert plan.prefix == 3
    assert plan.parked == [Run(7, 3, 5)]
    assert plan.removed == [(3, 7), (12, 13)]
    assert plan.steps == [Run(7, 3, 5), Evaluate(8, 10)]  # the question but its last token
    cache = apply(evaluated, tokens, 4)
    assert cache.sequence(0) == list(enumerate(tokens[:-1]))
    assert cache.sequence(PARKING) == []


def test_an_inserted_note_is_evaluated_at_its_own_place_and_the_later_notes_move_right() -> None:
    system, kept, new, later, question = [1, 2], [10, 11, 12], [50, 51, 52, 53], [20, 21, 22], [30, 31]
    evaluated = system + kept + later + [40, 41]
    tokens = system + kept + new + later + question
    cache = apply(evaluated, tokens, 3)
    assert cache.sequence(0) == list(enumerate(tokens[:-1]))
    assert cache.evaluated == len(new) + len(question) - 1


def test_the_tail_after_a_changed_question_is_evaluated_again() -> None:
    """ "Answer:" and the turn markers after the question match the typed prompt's, but were computed after the
    question without its last word: the answer is read from them, so they are not kept."""
    system, note, tail = [1, 2, 3], [10, 11, 12, 13], [70, 71, 72, 73]
    evaluated = [*system, 9, 9, *note, 30, 31, *tail]
    tokens = system + note + [30, 31, 32] + tail + [74]
    plan = plan_reuse(evaluated, tokens, 4)
    assert plan is not None
    assert plan.parked == [Run(5, 3, 6)]  # the note and the question words typed before
    assert plan.steps[-1] == Evaluate(9, len(tokens) - 1)  # the last word and the tail
    assert plan_reuse([*system, 9, *tail], system + tail + [74], 4) is None  # only the tail would move


def test_runs_shorter_than_the_minimum_are_evaluated_again() -> None:
    evaluated = [1, 2, 3, 9, 4, 5, 8, 8]
    tokens = [1, 2, 3, 4, 5, 6, 7]
    assert reusable_runs(evaluated, tokens, 3) == [Run(0, 0, 3)]
    assert reusable_runs(evaluated, tokens, 2) == [Run(0, 0, 3), Run(4, 3, 2)]
    assert plan_reuse(evaluated, tokens, 3) is None


def test_the_last_token_is_never_reused_so_the_answer_gets_its_logits() -> None:
    evaluated = [1, 2, 9, 3, 4, 5, 6]
    tokens = [1, 2, 3, 4, 5, 6]
    runs = reusable_runs(evaluated, tokens, 2)
    assert runs[-1].target + runs[-1].length == len(tokens) - 1


@pytest.mark.parametrize("seed", range(40))
def test_random_edits_rebuild_exactly_the_new_prompt(seed: int) -> None:
    """Notes dropped, inserted and kept in any mix: every cell ends in sequence 0 at its prompt position, none
    is left parked, and llama.cpp's consecutive-position rule holds at every evaluation."""
    rng = random.Random(seed)
    notes = [[rng.randrange(1000) for _ in range(rng.randrange(3, 12))] for _ in range(14)]
    system = [rng.randrange(1000, 1100) for _ in range(6)]
    typed = sorted(rng.sample(range(14), 8))
    final = sorted(rng.sample(range(14), 8))
    evaluated = system + [t for i in typed for t in notes[i]] + [2001, 2002]
    tokens = system + [t for i in final for t in notes[i]] + [2001, 2002, 2003]
    min_tokens = rng.choice([1, 3, 5])
    if plan_reuse(evaluated, tokens, min_tokens) is None:
        moved = [run for run in reusable_runs(evaluated, tokens, min_tokens) if run.source or run.target]
        assert moved in ([], moved[-1:]) and all(run.target + run.length == len(tokens) - 1 for run in moved)
        return
    cache = apply(evaluated, tokens, min_tokens)
    assert cache.sequence(0) == list(enumerate(tokens[:-1]))
    assert cache.sequence(PARKING) == []
