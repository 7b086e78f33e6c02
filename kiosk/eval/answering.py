"""The protocol's answers: each condition's prompt answered as the kiosk answers it, and scored after every answer
step (kiosk.llm.answer_steps), so one run shows what each step of the answer profile changed."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kiosk.eval.conditions import Condition, Contexts
from kiosk.eval.locomo import Question
from kiosk.eval.metrics import CATEGORY_NAMES, Scored, aggregate, score_answer
from kiosk.eval.report import STEP_SUMMARIES
from kiosk.eval.stages import Progress
from kiosk.llm.answer_steps import shown_reply
from kiosk.llm.profiles import AnswerProfile
from kiosk.llm.prompts import compact_answer_messages

if TYPE_CHECKING:
    from kiosk.memory.note import Note

# The answer after each step: the reply as given, its shown form, after a restating answer was replaced, after a
# list was completed, after an answer the notes do not give became "I don't know" (the answer shown).
ANSWER_STEPS = ("reply", "shown", "unlisted", "listed", "answer")

_LEAD_IN = re.compile(r"^(answer|the answer is|a)\s*[:\-]\s*", re.IGNORECASE)


def clean_answer(text: str) -> str:
    """First line of the reply without a leading 'Answer:' label or wrapping quotes."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    first = _LEAD_IN.sub("", first).strip()
    return first.strip("\"'` ").strip()


def answer_request(question: str, notes: Sequence[Note], person: str | None) -> list[dict[str, str]]:
    """The kiosk's answering prompt for these notes, oldest first."""
    ordered = sorted(notes, key=lambda n: (n.timestamp, n.id or 0))
    lines = [(n.timestamp, n.content, n.context) for n in ordered]
    return compact_answer_messages(question, lines, person)


def question_rows(questions: Sequence[Question]) -> list[dict[str, Any]]:
    """One results row per question, before any condition's answer is added to it."""
    return [
        {
            "key": q.key,
            "category": CATEGORY_NAMES[q.category],
            "question": q.question,
            "answer": q.answer,
            "evidence": list(q.evidence),
        }
        for q in questions
    ]


def answer_all(
    llm: Any,
    profile: AnswerProfile,
    answer_tokens: int,
    conditions: Sequence[Condition],
    questions: Sequence[Question],
    contexts: Contexts,
    rows: list[dict[str, Any]],
    progress: Progress,
) -> dict[Condition, dict[str, list[Scored]]]:
    """Every condition's prompt for every question answered (one LLM call unless the identical prompt was answered
    before) and written into `rows`; returns each condition's scores after each answer step."""
    scored_steps: dict[Condition, dict[str, list[Scored]]] = {
        c: {step: [] for step in ANSWER_STEPS} for c in conditions
    }
    total = len(questions) * len(conditions)
    done = 0
    for condition in conditions:
        for qi, question in enumerate(questions):
            notes, person = contexts.prompts[condition][qi]
            messages = answer_request(question.question, notes, person)
            reply = clean_answer(llm.chat(messages, max_tokens=answer_tokens, temperature=0.0))
            shown = shown_reply(
                llm,
                messages,
                question.question,
                reply,
                notes_given=bool(notes),
                profile=profile,
                max_tokens=answer_tokens,
                temperature=0.0,
                clean=clean_answer,
            )
            first, prediction = shown.first, shown.text
            meta = contexts.meta[qi].setdefault(condition, {})
            if shown.replaced is not None:
                meta["first_answer"] = first
            if shown.listed is not None:
                meta["unlisted_answer"] = shown.before_lists
            if shown.ungrounded is not None:
                meta["ungrounded_answer"] = shown.before_grounding
            steps = {
                "reply": reply,
                "shown": first,
                "unlisted": shown.before_lists,
                "listed": shown.before_grounding,
                "answer": prediction,
            }
            step_scores = {text: score_answer(text, question.answer, question.category) for text in steps.values()}
            for step, text in steps.items():
                scored_steps[condition][step].append(step_scores[text])
            score = step_scores[prediction]
            rows[qi][condition] = {
                "prediction": prediction,
                **({"reply": reply} if reply != first else {}),
                "f1": round(score.f1, 4),
                "bleu1": round(score.bleu1, 4),
                **meta,
            }
            done += 1
            progress(f"answer:{condition}", done, total)
    return scored_steps


def step_summaries(
    profile: AnswerProfile, steps: dict[str, list[Scored]], rows: Sequence[dict[str, Any]], condition: Condition
) -> dict[str, dict[str, Any]]:
    """For each answer step the profile takes: the condition's scores before it, and how many answers it changed."""
    summaries = {}
    for summary, before, after, marker, profile_steps in STEP_SUMMARIES:
        if any(profile.has(step) for step in profile_steps):
            summaries[summary] = {
                **_before_step(steps[before], steps[after]),
                "changed": sum(1 for row in rows if marker in row.get(condition, {})),
            }
    return summaries


def _before_step(replies: Sequence[Scored], answers: Sequence[Scored]) -> dict[str, Any]:
    """The scores of the answers before a step (the restated question cut, a restating answer replaced, a list
    completed), and how many answers that step changed the F1 of."""
    before = aggregate(replies)
    return {
        "f1": round(before.average_f1, 2),
        "bleu1": round(before.average_bleu1, 2),
        "better": sum(1 for old, new in zip(replies, answers, strict=True) if new.f1 > old.f1),
        "worse": sum(1 for old, new in zip(replies, answers, strict=True) if new.f1 < old.f1),
    }
