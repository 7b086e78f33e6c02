"""An answer copied from a note a later note changed is answered again without it (kiosk.llm.superseded), with
test doubles and prompts built as the kiosk builds them."""

from __future__ import annotations

from datetime import datetime

import pytest
from doubles import ScriptedLLM

from kiosk.llm.answer_steps import shown_reply
from kiosk.llm.note_lines import asked_again_without, note_lines, without_lines
from kiosk.llm.profiles import DEFAULT_PROFILE, profile_without
from kiosk.llm.prompts import compact_answer_messages, notes_text, shared_label
from kiosk.llm.superseded import misleading_lines, superseded_lines, words_after_change

DENTIST = "When is my dentist appointment?"


def said(month: int, day: int, text: str, who: str = "Tobi") -> tuple[datetime, str, str]:
    """A note as the store gives it to the prompt: when, what, and the context naming its speaker."""
    return (datetime(2026, month, day, 9, 0), text, f"{who} said this on that day")


TOBI = [
    said(10, 6, "Remember I've got the dentist on Tuesday 13 October at 3."),
    said(10, 13, "Actually the dentist moved to Friday 16 October, same time."),
    said(10, 24, "I'll pick up the cake for Grandma's lunch on the 1st."),
]
OLD_DENTIST = "Tobi: Remember I've got the dentist on Tuesday 13 October at 3."
TOBI_MOVED = "Tobi: Actually the dentist moved to Friday 16 October, same time."


def prompt(
    question: str, notes: list[tuple[datetime, str, str]], shared: list[tuple[tuple[datetime, str, str], str]] = ()
) -> str:
    return notes_text(compact_answer_messages(question, notes, "Tobi", list(shared)))


def test_an_answer_with_the_day_a_later_note_moved_is_a_copy_of_the_earlier_note() -> None:
    assert superseded_lines(DENTIST, "13 October", prompt(DENTIST, TOBI)) == [OLD_DENTIST]
    assert superseded_lines(DENTIST, "Tuesday at 3", prompt(DENTIST, TOBI)) == [OLD_DENTIST]


def test_an_answer_from_the_latest_note_or_without_a_day_is_left_alone() -> None:
    notes = prompt(DENTIST, TOBI)
    assert superseded_lines(DENTIST, "Friday 16 October", notes) == []
    assert superseded_lines(DENTIST, "I don't know", notes) == []
    assert superseded_lines("Is my dentist appointment on Tuesday?", "Yes", notes) == []


def test_later_events_without_a_word_of_change_do_not_replace_earlier_ones() -> None:
    visits = [
        said(3, 2, "I went to the dentist today for a check-up."),
        said(9, 7, "I went to the dentist today, a filling this time."),
    ]
    question = "When did I go to the dentist for a check-up?"
    assert superseded_lines(question, "2 March 2026", prompt(question, visits)) == []
    moved = [visits[0], (visits[1][0], "Actually the dentist moved my check-up to 9 September.", visits[1][2])]
    assert len(superseded_lines(question, "2 March 2026", prompt(question, moved))) == 1


def test_a_later_change_to_another_appointment_does_not_replace_the_dentist() -> None:
    notes = [TOBI[0], said(10, 8, "Actually the eye appointment moved to Thursday at 2.")]
    assert superseded_lines(DENTIST, "13 October", prompt(DENTIST, notes)) == []


def test_a_handover_dose_changed_later_in_the_asker_s_own_notes_is_superseded_across_blocks() -> None:
    question = "How much warfarin does Arthur have tonight?"
    own = [said(10, 16, "The GP says cut Arthur's warfarin to 2 milligrams from tonight.", "Kwame")]
    handover = said(10, 12, "Arthur's warfarin is 3 milligrams at six in the evening.", "Priya")
    text = prompt(question, own, [(handover, shared_label("group:carers", "Priya"))])
    stale = superseded_lines(question, "3 milligrams", text)
    assert len(stale) == 1 and "3 milligrams at six" in stale[0]
    assert superseded_lines(question, "2 milligrams", text) == []


def test_lines_of_the_same_day_in_different_blocks_are_not_ordered() -> None:
    question = "How much warfarin does Arthur have tonight?"
    own = [said(10, 12, "Now Arthur's warfarin is 2 milligrams.", "Kwame")]
    handover = said(10, 12, "Arthur's warfarin is 3 milligrams at six.", "Priya")
    text = prompt(question, own, [(handover, shared_label("group:carers", "Priya"))])
    assert superseded_lines(question, "3 milligrams", text) == []
    assert [line.day for line in note_lines(text)] == [datetime(2026, 10, 12).date()] * 2


def test_the_earlier_line_and_a_day_left_empty_are_left_out_of_the_second_prompt() -> None:
    messages = compact_answer_messages(DENTIST, TOBI, "Tobi")
    second = without_lines(messages, OLD_DENTIST.__eq__)
    assert second[0] == messages[0]
    assert OLD_DENTIST not in second[1]["content"] and "[6 October 2026]" not in second[1]["content"]
    assert (
        second[1]["content"].replace("\n[13 October", "\n" + "[6 October 2026]\n" + OLD_DENTIST + "\n[13 October", 1)
        == messages[1]["content"]
    )


def test_the_model_is_asked_again_without_the_earlier_note_and_its_answer_shown() -> None:
    messages = compact_answer_messages(DENTIST, TOBI, "Tobi")
    left_out = misleading_lines(DENTIST, "13 October", notes_text(messages))
    assert left_out is not None and left_out(OLD_DENTIST) and not left_out(TOBI_MOVED)
    assert misleading_lines(DENTIST, "16 October", notes_text(messages)) is None
    llm = ScriptedLLM(default="Friday 16 October at 3.")
    again = asked_again_without(llm, messages, DENTIST, left_out, max_tokens=32, temperature=0.0, concise=True)
    assert again == "Friday 16 October at 3."
    assert len(llm.calls) == 1 and OLD_DENTIST not in llm.calls[0].messages[1]["content"]


def test_the_default_profile_takes_the_step_and_its_steps_off_run_does_not() -> None:
    messages = compact_answer_messages(DENTIST, TOBI, "Tobi")
    kwargs = {"notes_given": True, "max_tokens": 32, "temperature": 0.0}
    llm = ScriptedLLM(default="Friday 16 October")
    kept = shown_reply(
        llm, messages, DENTIST, "13 October", profile=profile_without("small-model", ("reask-superseded",)), **kwargs
    )  # type: ignore[arg-type]
    assert kept.text == "13 October" and llm.calls == []
    current = shown_reply(llm, messages, DENTIST, "13 October", profile=DEFAULT_PROFILE, **kwargs)  # type: ignore[arg-type]
    assert (current.first, current.replaced, current.text) == (
        "13 October",
        "Friday 16 October",
        "Friday 16 October",
    )


def test_a_correction_that_refers_back_with_fewer_words_supersedes_the_earlier_note() -> None:
    question = "When are we getting our flu shots?"
    shots = [
        said(11, 19, "Flu shot and COVID booster at the pharmacy on Tuesday 24 November at 11, both of us.", "Walter"),
        said(11, 20, "Actually the pharmacy moved our shots to Wednesday 25 November at 2.", "Walter"),
    ]
    assert len(superseded_lines(question, "24 November", prompt(question, shots))) == 1
    other = [shots[0], (shots[1][0], "Actually the vet moved Pepper's check-up to Friday 27 November.", shots[1][2])]
    assert superseded_lines(question, "24 November", prompt(question, other)) == []


@pytest.mark.parametrize(
    ("question", "earlier", "later", "answer"),
    [
        (  # another thing of the same name
            "What's the code for the front door?",
            "Staff only: the back door code is 4719.",
            "I changed the server room alarm code today, it's 8842 now.",
            "4719",
        ),
        (  # a line that does not say it corrects anything, to the same friend
            "When did Sam first go to the doctor about his weight?",
            "Hey Evan, I saw my doctor on Monday 22 May and the weight wasn't great.",
            "Hey Evan, friends mocked my weight on Friday 21 July, I need to make changes.",
            "22 May",
        ),
    ],
)
def test_a_later_line_referring_back_with_fewer_words_but_no_correction_does_not_supersede(
    question: str, earlier: str, later: str, answer: str
) -> None:
    notes = [said(5, 24, earlier, "Sam"), said(7, 27, later, "Sam")]
    assert superseded_lines(question, answer, prompt(question, notes)) == []


def test_a_later_line_naming_the_old_dose_only_as_what_it_changed_from_supersedes_it() -> None:
    question = "How many units of Lantus does Mum get at bedtime now?"
    notes = [
        said(10, 26, "Mum's Lantus is 10 units at bedtime.", "Marc"),
        said(11, 6, "Dr Nguyen put Mum's Lantus up from 10 to 12 units at bedtime, starting tonight.", "Marc"),
    ]
    text = notes_text(compact_answer_messages(question, notes, "Marc"))
    assert superseded_lines(question, "10 units", text) == ["Marc: Mum's Lantus is 10 units at bedtime."]
    assert superseded_lines(question, "12 units", text) == []


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("Dr Berthier wants my Tresiba up to 20 units from tonight, my morning sugars are too high.", ["20", "units"]),
        ("Change of plan, we drive to Uppsala on Friday evening instead.", ["we", "drive", "to", "Uppsala", "on"]),
        ("Aqua aerobics moved from Wednesday to Thursday.", ["from", "to", "Thursday."]),
    ],
)
def test_the_words_a_line_changes_things_to_end_with_its_clause(line: str, words: list[str]) -> None:
    said = words_after_change(line)
    assert said[: len(words)] == words and "morning" not in said and "sugars" not in said


def test_a_change_clause_that_negates_is_read_on_to_what_holds_instead() -> None:
    line = "Change of plan, the plumber can't make it tomorrow, he's coming Thursday the 5th at eight instead."
    assert words_after_change(line)[6:9] == ["he's", "coming", "Thursday"]
    assert "Thursday" not in words_after_change("Change of plan, we drive on Friday, not Thursday.")
