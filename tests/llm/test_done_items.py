from __future__ import annotations

from datetime import datetime

import pytest

from kiosk.llm.done_items import without_done_items
from kiosk.llm.prompts import compact_answer_messages, notes_text

LIST = (
    datetime(2026, 10, 16, 12),
    "Office kitchen shopping: oat milk, coffee beans, paper towels and tea bags.",
    "Marcus said this on 16 October 2026, 12:00 pm.",
)
GOT_TEA = (
    datetime(2026, 10, 19, 9, 10),
    "Got the tea bags already, the rest of the kitchen list is still to buy.",
    "Marcus said this on 19 October 2026, 9:10 am.",
)
TEA_AGAIN = (
    datetime(2026, 10, 20, 8),
    "We're out of tea bags again, need more.",
    "Marcus said this on 20 October 2026, 8:00 am.",
)
ALL_FOUR = "oat milk, coffee beans, paper towels and tea bags."
STILL_TO_BUY = "What do I still need to buy for the office kitchen?"


def notes(*lines: tuple[datetime, str, str]) -> str:
    return notes_text(compact_answer_messages(STILL_TO_BUY, list(lines), "Marcus"))


def test_an_item_a_later_note_says_was_bought_leaves_the_list() -> None:
    assert without_done_items(STILL_TO_BUY, ALL_FOUR, notes(LIST, GOT_TEA)) == "oat milk, coffee beans, paper towels"


def test_an_item_needed_again_after_it_was_bought_stays() -> None:
    assert without_done_items(STILL_TO_BUY, ALL_FOUR, notes(LIST, GOT_TEA, TEA_AGAIN)) is None


def test_only_the_clause_that_names_the_item_counts() -> None:
    mixed = (datetime(2026, 10, 19, 9), "I need milk, the eggs I already have.", "Ana said this on 19 October 2026.")
    question = "What do I still need to get from the shop?"
    assert without_done_items(question, "Milk, eggs", notes(mixed)) == "Milk"
    assert without_done_items(question, "Milk and bread", notes(mixed)) is None


def test_what_is_still_needed_for_a_project_leaves_out_what_was_bought() -> None:
    needs = (
        datetime(2026, 11, 17, 20),
        "Science project due Friday. I need poster board and glue sticks.",
        "Léa said this.",
    )
    bought = (datetime(2026, 11, 20, 19), "Bought the poster board for Léa. Still need glue sticks.", "Marc said this.")
    question = "What do I still need for my science project?"
    assert without_done_items(question, "poster board and glue sticks", notes(needs, bought)) == "glue sticks"


@pytest.mark.parametrize(
    "question",
    [
        "What did I buy for the office kitchen?",  # not what is still to do
        "Which tablets do I still need to take today?",  # medicine is never cut short
    ],
)
def test_only_a_question_about_an_errand_still_to_do_is_shortened(question: str) -> None:
    assert without_done_items(question, ALL_FOUR, notes(LIST, GOT_TEA)) is None


def test_a_list_whose_every_item_is_done_or_a_single_item_is_left_alone() -> None:
    assert without_done_items(STILL_TO_BUY, "Tea bags", notes(LIST, GOT_TEA)) is None
    assert without_done_items(STILL_TO_BUY, "tea bags and tea bags", notes(LIST, GOT_TEA)) is None
