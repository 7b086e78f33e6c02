"""LoCoMo conversations and questions: validated loading, session dates, and the fixed stratified subset.

Categories follow LoCoMo's own evaluation code (see ../shared/data/README.md): 1 multi-hop, 2 temporal,
4 single-hop. Category 3 (open-domain world knowledge) and 5 (adversarial) are not evaluated here.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kiosk.errors import DataError
from kiosk.eval.metrics import CATEGORY_ORDER

LOCOMO_FILE = Path("locomo") / "locomo10.json"
EVALUATED_CATEGORIES: tuple[int, ...] = CATEGORY_ORDER
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    session_date: str
    timestamp: datetime
    image_caption: str | None = None


@dataclass(frozen=True)
class Session:
    index: int
    date_time: str
    timestamp: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    conversation_id: str
    index: int  # position in the conversation's `qa` list: a stable id across runs
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.conversation_id}#{self.index}"


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...] = field(repr=False)

    @property
    def turns(self) -> list[Turn]:
        return [turn for session in self.sessions for turn in session.turns]

    def session_dates(self) -> dict[int, str]:
        return {session.index: session.date_time for session in self.sessions}

    @property
    def asked_at(self) -> datetime:
        """When its questions are asked: one day after the last session (the memory's "now")."""
        return max(session.timestamp for session in self.sessions) + timedelta(days=1)


def parse_session_date(raw: str, where: str) -> datetime:
    try:
        return datetime.strptime(raw.strip(), _DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError as exc:
        raise DataError(
            f"{where}: session date {raw!r} is not like '1:56 pm on 8 May, 2023'", "fix the date in the file"
        ) from exc


def parse_evidence(items: Sequence[Any]) -> tuple[str, ...]:
    """Normalise evidence ids; a few LoCoMo items pack several ids in one string ('D8:6; D9:17')."""
    ids: list[str] = []
    for item in items:
        for session, turn in _EVIDENCE_ID.findall(str(item)):
            dia_id = f"D{int(session)}:{int(turn)}"
            if dia_id not in ids:
                ids.append(dia_id)
    return tuple(ids)


def _require(mapping: Any, key: str, where: str, expected: type | tuple[type, ...]) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise DataError(f"{where}: missing field '{key}'", "the file must follow LoCoMo's locomo10.json layout")
    value = mapping[key]
    if not isinstance(value, expected):
        names = expected.__name__ if isinstance(expected, type) else "/".join(t.__name__ for t in expected)
        raise DataError(f"{where}: field '{key}' must be {names}", "the file must follow LoCoMo's layout")
    return value


def _parse_session(conversation: dict[str, Any], index: int, where: str) -> Session:
    key = f"session_{index}"
    date_raw = _require(conversation, f"{key}_date_time", where, str)
    timestamp = parse_session_date(date_raw, f"{where} {key}_date_time")
    raw_turns = _require(conversation, key, where, list)
    turns = []
    for position, raw in enumerate(raw_turns):
        turn_where = f"{where} {key}[{position}]"
        caption = raw.get("blip_caption") if isinstance(raw, dict) else None
        turns.append(
            Turn(
                dia_id=_require(raw, "dia_id", turn_where, str),
                speaker=_require(raw, "speaker", turn_where, str),
                text=_require(raw, "text", turn_where, str),
                session=index,
                session_date=date_raw,
                timestamp=timestamp,
                image_caption=caption if isinstance(caption, str) else None,
            )
        )
    return Session(index=index, date_time=date_raw, timestamp=timestamp, turns=tuple(turns))


def _parse_question(raw: Any, sample_id: str, index: int) -> Question | None:
    where = f"conversation {sample_id} qa[{index}]"
    category = _require(raw, "category", where, int)
    if category not in EVALUATED_CATEGORIES:
        return None
    answer = _require(raw, "answer", where, (str, int, float))
    return Question(
        conversation_id=sample_id,
        index=index,
        question=_require(raw, "question", where, str),
        answer=str(answer),
        category=category,
        evidence=parse_evidence(_require(raw, "evidence", where, list)),
    )


def parse_conversation(sample: Any, position: int) -> Conversation:
    """Validate one LoCoMo sample; any missing field raises DataError naming the conversation and the field."""
    sample_id = sample.get("sample_id") if isinstance(sample, dict) else None
    where = f"conversation {sample_id}" if isinstance(sample_id, str) else f"conversation #{position}"
    sample_id = _require(sample, "sample_id", where, str)
    conversation = _require(sample, "conversation", where, dict)
    speaker_a = _require(conversation, "speaker_a", where, str)
    speaker_b = _require(conversation, "speaker_b", where, str)
    indices = sorted(int(match.group(1)) for key in conversation if (match := _SESSION_KEY.match(key)))
    if not indices:
        raise DataError(f"{where}: missing field 'session_1'", "a conversation needs at least one session")
    sessions = tuple(_parse_session(conversation, index, where) for index in indices)
    raw_questions = _require(sample, "qa", where, list)
    questions = tuple(
        question
        for index, raw in enumerate(raw_questions)
        if (question := _parse_question(raw, sample_id, index)) is not None
    )
    return Conversation(sample_id, speaker_a, speaker_b, sessions, questions)


def locomo_path(data_dir: Path) -> Path:
    if not data_dir.is_dir():
        raise DataError(
            f"evaluation data directory {data_dir} does not exist",
            "set KIOSK_DATA (or paths.eval_data_dir) to the shared data folder",
        )
    path = data_dir / LOCOMO_FILE
    if not path.is_file():
        raise DataError(f"LoCoMo file {path} is missing", f"put locomo10.json under {data_dir / 'locomo'}")
    return path


def load_conversations(path: Path, limit: int | None = None) -> list[Conversation]:
    """All conversations of a LoCoMo JSON file (the first `limit` when given), validated."""
    try:
        samples = json.loads(path.read_bytes())
    except FileNotFoundError as exc:
        raise DataError(f"LoCoMo file {path} is missing", "give the path of locomo10.json") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"LoCoMo file {path} is not valid JSON ({exc})", "use LoCoMo's locomo10.json") from exc
    if not isinstance(samples, list) or not samples:
        raise DataError(f"LoCoMo file {path} holds no conversation list", "use LoCoMo's locomo10.json")
    selected = samples if limit is None else samples[:limit]
    conversations = [parse_conversation(sample, position) for position, sample in enumerate(selected)]
    seen: set[str] = set()
    for conversation in conversations:
        if conversation.sample_id in seen:
            raise DataError(f"conversation {conversation.sample_id} appears twice in {path}", "ids must be unique")
        seen.add(conversation.sample_id)
    return conversations


SAMPLE_RATIO = 0.1  # the protocol's question sample: 10 % of categories 1/2/4 per conversation


def select_questions(
    conversations: Sequence[Conversation], ratio: float, seed: int, held_out_from: int | None = None
) -> list[Question]:
    """The fixed subset: per conversation and category, round(ratio x n) questions drawn by the seed.

    The draw depends only on (seed, conversation id, category) and the file's question order, so the
    same questions come back for every modality, condition and model. With `held_out_from` set to the
    seed of an evaluation sample, the draw is made among the questions OUTSIDE that sample: a development
    set for tuning prompts and thresholds that never touches the reported questions. The sample left out is
    always the protocol's (SAMPLE_RATIO), so `ratio` 1.0 takes every held-out question.
    """
    if not 0 < ratio <= 1:
        raise DataError(f"question ratio {ratio} is outside (0, 1]", "use e.g. --ratio 0.1")
    excluded = (
        {q.key for q in select_questions(conversations, SAMPLE_RATIO, held_out_from)}
        if held_out_from is not None
        else set()
    )
    chosen: list[Question] = []
    for conversation in conversations:
        for category in EVALUATED_CATEGORIES:
            full = [q for q in conversation.questions if q.category == category]
            stratum = [q for q in full if q.key not in excluded]
            if not stratum:
                continue
            take = min(len(stratum), max(1, round(ratio * len(full))))
            rng = random.Random(f"{seed}:{conversation.sample_id}:{category}")
            picked = sorted(rng.sample(range(len(stratum)), take))
            chosen.extend(stratum[i] for i in picked)
    return chosen


def conversations_digest(conversations: Sequence[Conversation], source: Path) -> str:
    """Hash of the file bytes and the selected conversation ids (part of the store cache key)."""
    digest = hashlib.sha256(source.read_bytes())
    digest.update(",".join(c.sample_id for c in conversations).encode())
    return digest.hexdigest()


# ---- the slice of the data a run uses ----------------------------------------------------------------


def truncate_sessions(conversation: Conversation, sessions: int | None) -> Conversation:
    if sessions is None:
        return conversation
    kept = conversation.sessions[:sessions]
    kept_sessions = {f"D{s.index}" for s in kept}
    questions = tuple(
        q for q in conversation.questions if q.evidence and all(e.split(":")[0] in kept_sessions for e in q.evidence)
    )
    return Conversation(conversation.sample_id, conversation.speaker_a, conversation.speaker_b, kept, questions)


def cap_round_robin(questions: Sequence[Question], limit: int | None) -> list[Question]:
    if limit is None or limit >= len(questions):
        return list(questions)
    by_user: dict[str, list[Question]] = {}
    for question in questions:
        by_user.setdefault(question.conversation_id, []).append(question)
    for user, queue in by_user.items():  # alternate categories inside each user's queue
        rank: dict[int, int] = {}
        keyed = []
        for question in queue:
            rank[question.category] = rank.get(question.category, 0) + 1
            keyed.append((rank[question.category], question))
        by_user[user] = [q for _, q in sorted(keyed, key=lambda item: item[0])]
    picked: list[Question] = []
    queues = list(by_user.values())
    while len(picked) < limit and any(queues):
        for queue in queues:
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    order = {q.key: i for i, q in enumerate(questions)}
    return sorted(picked, key=lambda q: order[q.key])


def conversation_samples(source: Path, conversations: Sequence[Conversation]) -> list[dict[str, Any]]:
    """The raw LoCoMo samples of the selected conversations, sessions cut like the parsed ones."""
    raw = json.loads(source.read_bytes())
    wanted = {c.sample_id: c for c in conversations}
    samples = []
    for sample in raw:
        conversation = wanted.get(sample.get("sample_id"))
        if conversation is None:
            continue
        kept = {f"session_{s.index}" for s in conversation.sessions}
        body = {
            key: value
            for key, value in sample["conversation"].items()
            if not key.startswith("session_") or key in kept or key.removesuffix("_date_time") in kept
        }
        samples.append({"sample_id": sample["sample_id"], "conversation": body, "qa": []})
    return samples
