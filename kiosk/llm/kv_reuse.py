"""Which runs of an already evaluated context a new prompt can reuse when it is not a plain continuation.

The prompt prefilled while the question was typed lists the notes retrieved for the words typed so far;
the final prompt lists the final retrieval's notes, oldest first. The two usually share most notes, but the
first note that differs ends their common prefix, so plain prefix reuse evaluates everything after it again.
Like llama.cpp server's `--cache-reuse`, this finds the runs of the new prompt that the context holds
(anywhere, in the same order), so their KV cells can be kept and moved to their new positions (a RoPE shift,
the same as llama.cpp's context shift) and only the tokens in between are evaluated. Unlike the server, runs
may also move right (a note inserted before them) and the tokens between runs are evaluated at their own
positions, so the final prompt is exactly the kiosk's usual one: same notes, same order.

The price is an approximation: a kept run's KV cells were computed while it followed the old tokens, not
the new ones. The question and the answer do attend to the right tokens at the right positions. The 0.5B
model does not bear it: on 144 LoCoMo questions its owner F1 fell from 35.29 to 29.72 (8 answers better,
21 worse; bench/results/cache_reuse_f1.md), so llm.cache_reuse_min_tokens is off by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher


@dataclass(frozen=True)
class Run:
    """`length` tokens at position `source` of the context that the new prompt has at position `target`."""

    source: int
    target: int
    length: int

    @property
    def shift(self) -> int:
        return self.target - self.source


@dataclass(frozen=True)
class ReusePlan:
    """How to turn the evaluated context into the new prompt's context (all but its last token).

    llama.cpp only evaluates tokens right after the last position a sequence holds, so the runs after the
    common prefix are parked in another sequence, moved there, and handed back one by one as the tokens
    before each are evaluated: `steps` in prompt order, each an Evaluate or a Run to hand back."""

    prefix: int  # tokens of the common prefix, kept in place
    parked: list[Run]  # the other kept runs, in order
    removed: list[tuple[int, int]]  # context position ranges [start, end) dropped, in order
    moves: list[Run]  # parked runs to shift, in an order where no move lands on parked cells not yet moved
    steps: list[Evaluate | Run]

    @property
    def reused_tokens(self) -> int:
        return self.prefix + sum(run.length for run in self.parked)

    @property
    def evaluated_tokens(self) -> int:
        return sum(step.end - step.start for step in self.steps if isinstance(step, Evaluate))


@dataclass(frozen=True)
class Evaluate:
    """Prompt tokens [start, end) to evaluate at their own positions."""

    start: int
    end: int


def reusable_runs(evaluated: list[int], tokens: list[int], min_tokens: int) -> list[Run]:
    """The runs of `tokens` before its last token (whose logits the answer needs) that `evaluated` holds in the
    same order: the common prefix at any length, any other run at least `min_tokens` long."""
    limit = len(tokens) - 1
    if limit <= 0 or not evaluated:
        return []
    matcher = SequenceMatcher(None, evaluated, tokens[:limit], autojunk=False)
    runs = []
    for block in matcher.get_matching_blocks():
        if block.size == 0:
            continue
        is_prefix = block.a == 0 and block.b == 0
        if is_prefix or block.size >= min_tokens:
            runs.append(Run(block.a, block.b, block.size))
    return runs


def plan_reuse(evaluated: list[int], tokens: list[int], min_tokens: int) -> ReusePlan | None:
    """The plan, or None when it would reuse nothing beyond the common prefix (plain prefix reuse does that).

    Runs after the last token that changed are not kept: they are the prompt's tail after the question
    ("Answer:" and the chat template's turn markers), which matched the tail of the prompt typed so far, but
    their KV was computed after the question without its last words and the answer is read from them."""
    runs = reusable_runs(evaluated, tokens, min_tokens)
    prefix = runs[0].length if runs and runs[0].source == 0 and runs[0].target == 0 else 0
    parked = runs[1:] if prefix else runs
    while parked and parked[-1].target + parked[-1].length >= len(tokens) - 1:
        parked.pop()  # nothing changed after it
    if not parked:
        return None
    kept = [runs[0], *parked] if prefix else parked
    removed = []
    cursor = 0
    for run in kept:
        if run.source > cursor:
            removed.append((cursor, run.source))
        cursor = run.source + run.length
    if cursor < len(evaluated):
        removed.append((cursor, len(evaluated)))
    # Left shifts first, leftmost first, then right shifts, rightmost first: each lands where no cell is left.
    moves = [run for run in parked if run.shift < 0] + [run for run in reversed(parked) if run.shift > 0]
    steps: list[Evaluate | Run] = []
    cursor = prefix
    for run in parked:
        if run.target > cursor:
            steps.append(Evaluate(cursor, run.target))
        steps.append(run)
        cursor = run.target + run.length
    steps.append(Evaluate(cursor, len(tokens) - 1))
    return ReusePlan(prefix, parked, removed, moves, steps)
