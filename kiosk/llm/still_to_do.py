"""What is still on a list, read from the notes: the items their lists name that no later note says are done.

Given "Shopping for Dad: sugar-free squash, wholemeal bread, low-salt soup, plantain, and new slippers", "Add to
Dad's shopping: glucose tablets for the hypo box and two cotton vests" and the notes saying the bread, squash,
slippers, soup and tablets were since brought, got, picked up or bought, the 0.5B model answered "What's still on
Dad's shopping list?" with "Glucose tablets": the one thing bought last. The answer is the notes' own arithmetic.

A question asking what is still to do on an errand (kiosk.llm.done_items.asks_what_is_still_to_do) and opening
with "what" or "which" is answered with the items listed after a colon in the note lines whose heading is about
it ("Shopping for Dad:" for "Dad's shopping list": two of its words, or all when it has fewer, not counting the
day it is for; "Office kitchen shopping:" for "buy for the office kitchen"), each without what it is said with
("for the hypo box"), less those a clause of a line said since names (its last word) and says are done. Nothing
when no such list is in the notes or every item is done: the model's answer stands.
"""

from __future__ import annotations

import re

from kiosk.llm.answer_form import asked_sentence, content_stems, word_set
from kiosk.llm.compared_words import DAY_NAME_STEMS
from kiosk.llm.done_items import CLAUSE_END, DONE, asks_what_is_still_to_do
from kiosk.llm.lists import ITEM_SEPARATOR
from kiosk.llm.note_lines import NoteLine, note_lines
from kiosk.llm.note_speakers import spoken_text
from kiosk.stems import porter_stem

_ASKS_WHAT = re.compile(r"^\W*(?:what|which)\b", re.IGNORECASE)
_LISTING = re.compile(r"(?P<heading>[^.!?:]*):\s*(?P<items>[^.!?:]+)")
# What an item is said with, not what it is: "glucose tablets for the hypo box", "slippers with a back to them".
_ITEM_TAIL = re.compile(r"\s+\b(?:for|with|from|to|in|on|at|by)\b.*$", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_MAX_ITEM_WORDS = 6
# When a list is for says nothing of what it is: "Shopping for the braai on Saturday the 21st" is the braai's.
_WHEN_STEMS = DAY_NAME_STEMS | {porter_stem(word) for word in ("week", "weekend")}
_BUYING = frozenset({porter_stem("buy")})
_SHOPPING = frozenset({porter_stem("shopping")})
# Words of a heading or question that say it is a list to do, not which one: "Add to Dad's shopping".
_ERRAND_STEMS = frozenset(
    porter_stem(word) for word in word_set("still need needs left list lists buy get got sort do add added remaining")
)


def notes_still_to_do(question: str, notes: str) -> str | None:
    """The items the notes' lists about `question` name that no later line says are done, joined by ", " (see
    the module's docstring); None when the question does not ask what is still to do, or no item is left."""
    if not (asks_what_is_still_to_do(question) and _ASKS_WHAT.match(asked_sentence(question))):
        return None
    asked = content_stems(asked_sentence(question))
    # what is still to buy is on a shopping list: "Shopping for the braai:" for "still need to buy for the braai"
    wanted = asked - _ERRAND_STEMS | (_SHOPPING if asked & _BUYING else frozenset())
    said = [(line, spoken_text(line.text)) for line in note_lines(notes)]
    clauses = [(line, clause) for line, text in said for clause in CLAUSE_END.split(text)]
    left: dict[str, str] = {}
    for line, text in said:
        for heading, items in listings(text):
            about = {stem for stem in content_stems(heading) - _ERRAND_STEMS - _WHEN_STEMS if not stem[:1].isdigit()}
            if not about or len(about & wanted) < min(2, len(about)):
                continue
            for item, head in items:
                if not _done_after(line, head, clauses):
                    left.setdefault(head, item)
    answer = ", ".join(left.values())
    return answer[:1].upper() + answer[1:] if answer else None


def listings(text: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """The lists `text` gives after a colon, each as its heading and its items, each item with the stem of its
    last word before what it is said with ("Add to Dad's shopping: glucose tablets for the hypo box and two cotton
    vests" -> "Add to Dad's shopping", [("glucose tablets", "tablet"), ("two cotton vests", "vest")]); a part of
    more than a few words is a clause, not an item."""
    found: list[tuple[str, list[tuple[str, str]]]] = []
    for listing in _LISTING.finditer(text):
        items: list[tuple[str, str]] = []
        for part in ITEM_SEPARATOR.split(listing.group("items")):
            item = _ITEM_TAIL.sub("", part).strip()
            words = _WORD.findall(item)
            head = porter_stem(words[-1].lower()) if words else ""
            if len(words) <= _MAX_ITEM_WORDS and head in content_stems(item):
                items.append((item, head))
        if items:
            found.append((listing.group("heading").strip(), items))
    return found


def _done_after(listed: NoteLine, head: str, clauses: list[tuple[NoteLine, str]]) -> bool:
    """True when a clause of a line not said before `listed` names the item (its last word's stem) and says it is
    done. A line of the same day in the other notes block counts: the prompt does not say which came first, and an
    item is seldom bought before it is listed."""
    return any(
        line != listed and not line.before(listed) and head in content_stems(clause) and DONE.search(clause)
        for line, clause in clauses
    )
