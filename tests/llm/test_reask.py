"""A second answer when the first only restates the question or names a speaker (kiosk.llm.reask), with test
doubles."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from doubles import FirstWordBanningLLM, ScriptedLLM

from kiosk.llm.answer_form import shown_answer
from kiosk.llm.profiles import DEFAULT_PROFILE, AnswerProfile, Step
from kiosk.llm.prompts import UNKNOWN_ANSWER, MemoryLine, compact_answer_messages
from kiosk.llm.reask import replaced_restatement

QUESTION = "Where did Deborah meet her new neighbor Anna?"
MESSAGES = compact_answer_messages(QUESTION, [])


def without(step: Step) -> AnswerProfile:
    """The default profile without one of its steps."""
    return AnswerProfile("custom", tuple(taken for taken in DEFAULT_PROFILE.steps if taken != step))


def reask(llm: object, reply: str) -> str | None:
    """The answer shown instead of `reply` when notes were given, with the default profile."""
    return replaced(llm, reply, True, DEFAULT_PROFILE)


def test_an_answer_that_restates_the_question_is_answered_again_without_its_words_first() -> None:
    llm = FirstWordBanningLLM(second="Yoga in the park.")
    assert reask(llm, "Anna") == "Yoga in the park."
    assert llm.banned == [["Anna"]]
    assert llm.calls[-1].messages == MESSAGES  # the same prompt, not a second turn


def test_all_words_of_a_restating_sentence_are_banned_without_their_punctuation() -> None:
    llm = FirstWordBanningLLM(second="At yoga")
    assert reask(llm, "Deborah did meet her new neighbor, Anna.") == "At yoga"
    assert llm.banned == [["Anna", "Deborah", "did", "her", "meet", "neighbor", "new"]]


def test_the_first_answer_stands_when_the_second_restates_the_question_too_or_is_empty() -> None:
    assert reask(FirstWordBanningLLM(second="neighbor Anna"), "Anna") is None
    assert reask(FirstWordBanningLLM(second="  "), "Anna") is None


def test_an_answer_that_says_something_new_is_not_asked_again() -> None:
    llm = FirstWordBanningLLM(second="never used")
    assert reask(llm, "At yoga in the park") is None
    assert reask(llm, "I don't know.") is None
    assert llm.calls == []


def test_a_backend_that_cannot_ban_first_words_keeps_the_first_answer() -> None:
    llm = ScriptedLLM(default="never used")
    assert reask(llm, "Anna") is None
    assert llm.calls == []


def replaced(llm: object, reply: str, notes_given: bool, profile: AnswerProfile) -> str | None:
    shown = shown_answer(QUESTION, reply, profile.has("cut-restatement"))
    return replaced_restatement(
        llm,
        MESSAGES,
        QUESTION,
        reply,
        shown,
        notes_given=notes_given,
        profile=profile,
        max_tokens=16,
        temperature=0.0,
    )


def test_with_notes_a_restating_answer_is_answered_again_unless_switched_off() -> None:
    llm = FirstWordBanningLLM(second="Yoga in the park.")
    assert replaced(llm, "Anna", True, DEFAULT_PROFILE) == "Yoga in the park."
    assert replaced(llm, "Anna", True, without("reask-restated")) is None
    assert replaced(llm, "At yoga", True, DEFAULT_PROFILE) is None
    assert llm.banned == [["Anna"]]


def test_without_notes_a_restating_answer_is_shown_as_i_dont_know_unless_switched_off() -> None:
    llm = FirstWordBanningLLM(second="never used")
    assert replaced(llm, "Anna", False, DEFAULT_PROFILE) == UNKNOWN_ANSWER
    assert replaced(llm, "Anna", False, without("unknown-restated-without-notes")) is None
    assert replaced(llm, "At yoga", False, DEFAULT_PROFILE) is None
    assert llm.calls == []


SPEAKER_QUESTION = "Who inspired Dave's passion for car engineering?"
SPEAKER_NOTES = [
    (datetime(2023, 5, 2, tzinfo=UTC), "My dad taught me to fix engines when I was ten.", "Dave said this on 2 May"),
    (datetime(2023, 5, 2, tzinfo=UTC), "That's so cool, Dave!", "Calvin said this on 2 May"),
]
SPEAKER_MESSAGES = compact_answer_messages(SPEAKER_QUESTION, SPEAKER_NOTES, "Dave")


def reask_about(
    llm: object,
    question: str,
    notes: Sequence[MemoryLine],
    reply: str,
    asker: str,
    notes_given: bool = True,
    profile: AnswerProfile = DEFAULT_PROFILE,
) -> str | None:
    """What replaces `reply` to `question` asked by `asker` with these notes (none unless `notes_given`)."""
    return replaced_restatement(
        llm,
        compact_answer_messages(question, list(notes) if notes_given else [], asker if notes_given else None),
        question,
        reply,
        shown_answer(question, reply, True),
        notes_given=notes_given,
        profile=profile,
        max_tokens=16,
        temperature=0.0,
    )


def speaker_reask(
    llm: object, reply: str, notes_given: bool = True, profile: AnswerProfile = DEFAULT_PROFILE
) -> str | None:
    return reask_about(llm, SPEAKER_QUESTION, SPEAKER_NOTES, reply, "Dave", notes_given, profile)


def test_an_answer_naming_only_a_speaker_of_the_notes_is_answered_again_with_every_speaker_banned() -> None:
    llm = FirstWordBanningLLM(second="His dad.")
    assert speaker_reask(llm, "Calvin.") == "His dad."
    assert llm.banned == [["Calvin", "calvin", "dave"]]
    assert llm.calls[-1].messages == SPEAKER_MESSAGES


def test_a_speaker_named_within_an_answer_or_a_name_outside_the_notes_is_not_asked_again() -> None:
    llm = FirstWordBanningLLM(second="never used")
    assert speaker_reask(llm, "Calvin's father") is None
    assert speaker_reask(llm, "Maria") is None
    assert llm.calls == []


def test_the_speaker_answer_stands_when_the_second_names_a_speaker_too_when_switched_off_or_without_notes() -> None:
    assert speaker_reask(FirstWordBanningLLM(second="Dave"), "Calvin") is None
    off = FirstWordBanningLLM(second="His dad.")
    assert speaker_reask(off, "Calvin", profile=without("reask-speaker-names")) is None
    assert speaker_reask(off, "Calvin", notes_given=False) is None
    assert off.calls == []


def test_a_restating_answer_is_answered_again_with_the_speakers_banned_and_no_speaker_accepted() -> None:
    llm = FirstWordBanningLLM(second="Calvin")
    assert speaker_reask(llm, "Dave") is None  # "Dave" restates the question; "Calvin" only names a speaker
    assert llm.banned == [["Dave", "calvin", "dave"]]
    assert speaker_reask(FirstWordBanningLLM(second="His dad"), "Dave's passion") == "His dad"


CAKE_QUESTION = "Who is bringing the cake?"
CAKE_NOTES = [
    (datetime(2024, 6, 1, tzinfo=UTC), "I'll bring the cake Sunday", "Tom said this on 1 June 2024, 6:00 pm."),
    (datetime(2024, 6, 1, tzinfo=UTC), "Lovely, I'll do the salad then.", "Anna said this on 1 June 2024, 6:05 pm."),
]


def cake_reask(llm: object, reply: str) -> str | None:
    return reask_about(llm, CAKE_QUESTION, CAKE_NOTES, reply, "Anna")


def test_a_speaker_whose_own_note_says_what_is_asked_is_the_answer_and_is_not_asked_again() -> None:
    llm = FirstWordBanningLLM(second="Grandma")
    assert cake_reask(llm, "Tom") is None  # Tom said "I'll bring the cake Sunday": "Tom" stays
    assert llm.calls == []
    assert cake_reask(llm, "Anna.") == "Grandma"  # Anna's notes say nothing of the cake: asked again
    assert llm.banned == [["Anna", "anna", "tom"]]


VOLLEYBALL_QUESTION = "Who's picking me up from volleyball?"
VOLLEYBALL_NOTES = [
    (
        datetime(2026, 10, 5, 8, tzinfo=UTC),
        "Can someone pick me up from volleyball on Thursday at six?",
        "Lucía said this on 5 October 2026, 8:00 am.",
    ),
]


def volleyball_reask(llm: object, reply: str, question: str = VOLLEYBALL_QUESTION, asker: str = "Lucía") -> str | None:
    return reask_about(llm, question, VOLLEYBALL_NOTES, reply, asker)


def test_the_askers_own_name_never_answers_a_question_that_speaks_of_the_asker() -> None:
    llm = FirstWordBanningLLM(second="Carmen")
    assert volleyball_reask(llm, "Lucía") == UNKNOWN_ANSWER  # her own note says what is asked, but she is "me"
    assert llm.calls == []  # not asked again: another name would be a guess


def test_the_askers_name_stands_where_the_question_does_not_speak_of_the_asker_or_names_someone_else() -> None:
    llm = FirstWordBanningLLM(second="never used")
    assert volleyball_reask(llm, "Lucía", question="Who has volleyball on Thursday?") is None
    assert volleyball_reask(llm, "Lucía", asker="Carmen") is None  # a speaker's own note says it: her name stands
    assert llm.calls == []
