"""The verb a "who does it" question asks about, and the verbs that say it (kiosk.llm.asked_verb)."""

from __future__ import annotations

import pytest

from kiosk.llm.asked_verb import asked_verbs, verbs_meant
from kiosk.stems import porter_stem


@pytest.mark.parametrize(
    ("question", "verb"),
    [
        ("Who is coming into bed 2 tonight?", "come"),
        ("Who's going to bring the cake?", "bring"),
        ("Who will collect Mia from school?", "collect"),
        ("Who is picking me up?", "pick"),
    ],
)
def test_the_verb_a_who_question_asks_about(question: str, verb: str) -> None:
    verbs = asked_verbs(question)
    assert verbs is not None and porter_stem(verb) in verbs


@pytest.mark.parametrize(
    "question",
    ["Who is on call tonight?", "Who is Dev's nurse?", "Who is doing the baking?", "When is the plumber coming?"],
)
def test_no_verb_or_any_verb_is_none(question: str) -> None:
    assert asked_verbs(question) is None


def test_a_verb_is_said_by_the_verbs_of_its_group() -> None:
    assert verbs_meant(porter_stem("picking")) == {porter_stem(word) for word in ("pick", "collect", "fetch", "get")}
    assert verbs_meant(porter_stem("doing")) is None
