"""What is still on a list, read from the notes' lists less the items a note since says are done
(kiosk.llm.still_to_do)."""

from __future__ import annotations

import pytest

from kiosk.llm.still_to_do import listings, notes_still_to_do
from tests.doubles import answer_prompt

NOTES = """Notes of Bisi, oldest first:
<notes>
[5 October 2026]
Bisi: Dad's morning tablets: furosemide 40 mg, bisoprolol 2.5 mg, and metformin 500 mg with his breakfast.
[2 November 2026]
Bisi: Shopping for Dad: sugar-free squash, wholemeal bread, low-salt soup, plantain, and new slippers with a back.
[12 November 2026]
Bisi: Add to Dad's shopping: glucose tablets for the hypo box and two cotton vests.
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[1 November 2026]
- (care group note by Dan — not the asker's) Dan: Got a plantain for Femi at the market.
[4 November 2026]
- (care group note by Precious — not the asker's) Precious: Precious brought Femi the wholemeal bread and the squash.
[6 November 2026]
- (family group note by Tunde — not the asker's) Tunde: Got Grandad his new slippers, they're by his chair.
[12 November 2026]
- (care group note by Precious — not the asker's) Precious: Bought the glucose tablets, they're in the hypo box.
[14 November 2026]
- (care group note by Dan — not the asker's) Dan: Femi wants the low-salt soup warmed, not hot.
</notes>"""


def still_to_do(question: str, notes: str = NOTES) -> str | None:
    return notes_still_to_do(question, answer_prompt(notes, question))


def test_what_is_still_on_a_list_is_its_items_less_those_since_done() -> None:
    # the plantain got before the list was made is still to buy; the soup talked of is not bought; the glucose
    # tablets bought the same day in the other block are done; the morning tablets are another list
    assert still_to_do("What's still on Dad's shopping list?") == "Low-salt soup, plantain, two cotton vests"


@pytest.mark.parametrize(
    "question",
    [
        "Do we still need to get Dad new slippers?",  # a yes/no question
        "What's on Dad's shopping list?",  # not what is still to do
        "Which tablets do I still need to take?",  # not an errand
        "What do I still need to buy for the office kitchen?",  # no list about it
    ],
)
def test_no_answer_for_another_question_or_without_a_list_about_it(question: str) -> None:
    assert still_to_do(question) is None


def test_no_answer_when_every_item_is_done() -> None:
    notes = """Notes of Ana, oldest first:
<notes>
[2 November 2026]
Ana: Shopping: milk and eggs.
[3 November 2026]
Ana: Got the milk and the eggs on my way home.
</notes>"""
    assert still_to_do("What's still on the shopping list?", notes) is None


def test_listings_are_the_items_after_a_colon_without_what_they_are_said_with() -> None:
    assert listings("Add to Dad's shopping: glucose tablets for the hypo box and two cotton vests.") == [
        ("Add to Dad's shopping", [("glucose tablets", "tablet"), ("two cotton vests", "vest")])
    ]
    assert listings("For the carers: the key safe is on the wall by the front door, the code is 4071.") == []


def test_the_day_a_list_is_for_does_not_count_among_the_words_of_what_it_is() -> None:
    notes = """Notes of Thandi, oldest first:
<notes>
[7 November 2026]
Thandi: Shopping for the braai on Saturday the 21st (21 November 2026): boerewors, chicken, rolls, charcoal, ice.
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[7 November 2026]
- (family group note by Sipho — not the asker's) Sipho: Got the charcoal and the rolls.
</notes>"""
    question = "What do we still need to buy for the braai?"
    assert notes_still_to_do(question, answer_prompt(notes, question)) == "Boerewors, chicken, ice"
