"""One more answer when the first tells nothing: it only restates the question, or only names a speaker.

The 0.5B model answers about one LoCoMo question in fifteen with the question's own words ("What kind of
flowers does Audrey have a tattoo of?" -> "flowers"; "Where did Deborah meet her new neighbor Anna?" -> "Anna"),
although the notes it was given often name the answer. Such an answer tells the person nothing. Asked again in a
second turn ("That only repeats words of the question ..."), the model either repeated itself or, offered the
choice, said "I don't know" every time. What works is to generate the answer once more with the first answer's
words ruled out as the first word ("Yoga in the park."): llama.cpp bans their first tokens at the first position
only (kiosk.llm.llamacpp.LlamaCppLLM.chat_avoiding_first_words). The new answer is shown unless it restates the
question too; a backend without that ability keeps the first answer.

Without notes there is nothing to answer from: an answer that restates the question then is a guess in the
question's words (a stranger asking "What kind of pot did Mel make?" got "Pot"), shown as "I don't know".

An answer that is only the name of someone speaking in the notes ("Who inspired Dave's passion for car
engineering?" -> "Calvin", the friend he talks to; gold "His Dad") is mostly the model naming who was talking, not
who did the thing: on the 633 LoCoMo questions read in design, 13 of 14 such owner answers were wrong. It is
answered again the same way (the answer profile's reask-speaker-names step), unless a note of that speaker says
what the question asks about ("Who is bringing the cake?" -> "Tom", whose note is "I'll bring the cake Sunday"):
then the name is the answer, unless it is the asker's own name and the question speaks of the asker: Lucía's
own note "Can someone pick me up from volleyball?" names her, but "Lucía" never answers her "Who's picking me up
from volleyball?". That answer is shown as "I don't know", not asked again: asked again, the model named another
member of the household, right in 2 of 4 such household answers, and a wrong person is worse than no answer. With
that step every second answer, this one or a restatement's, also has every
speaker's name banned as its first word, and one that only names a speaker is not shown ("Maria" -> "John" for
"Who gave Maria's family money ...?").
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from kiosk.llm.answer_form import QUOTES_AND_PUNCTUATION, restates_question, says_what_is_asked, shown_answer
from kiosk.llm.backend import Message, reply_if_able
from kiosk.llm.personal_questions import speaks_of_the_asker
from kiosk.llm.profiles import AnswerProfile
from kiosk.llm.prompts import UNKNOWN_ANSWER, asker_of, note_speakers, notes_text, speaker_lines


def replaced_restatement(
    llm: object,
    messages: list[Message],
    question: str,
    reply: str,
    shown: str,
    *,
    notes_given: bool,
    profile: AnswerProfile,
    max_tokens: int,
    temperature: float,
    clean: Callable[[str], str] = str.strip,
) -> str | None:
    """What is shown instead of `shown` (the shown form of `reply`) when it tells nothing. When it only restates
    `question`: with notes a second answer (reask-restated), without notes "I don't know"
    (unknown-restated-without-notes). When notes were given and it only names one of their speakers, none whose own
    note says what is asked: a second answer (reask-speaker-names); "I don't know" when that speaker is the asker
    and the question speaks of the asker. None keeps `shown`; `profile` says which of these steps are taken."""
    notes = notes_text(messages)
    speakers = note_speakers(notes) if notes_given and profile.has("reask-speaker-names") else set()
    if restates_question(question, shown):
        if not notes_given:
            return UNKNOWN_ANSWER if profile.has("unknown-restated-without-notes") else None
        if not profile.has("reask-restated"):
            return None
    elif not names_only_a_speaker(shown, speakers):
        return None
    elif speaker_says_it(question, shown, notes):
        return UNKNOWN_ANSWER if names_the_asker_for_themselves(question, shown, notes) else None
    return reasked_answer(
        llm,
        messages,
        question,
        reply,
        max_tokens=max_tokens,
        temperature=temperature,
        concise=profile.has("cut-restatement"),
        clean=clean,
        speakers=speakers,
    )


def names_only_a_speaker(answer: str, speakers: Collection[str]) -> bool:
    """True when `answer` is only one of `speakers` (lower-cased names), give or take punctuation."""
    return " ".join(answer.split()).strip(QUOTES_AND_PUNCTUATION + " ").lower() in speakers


def speaker_says_it(question: str, speaker: str, notes: str) -> bool:
    """True when a note line of `speaker` holds what the question asks about (says_what_is_asked): "Who is bringing
    the cake?" -> "Tom", whose note says "I'll bring the cake Sunday", is the answer, not a speaker's name."""
    name = " ".join(speaker.split()).strip(QUOTES_AND_PUNCTUATION + " ").lower()
    return any(says_what_is_asked(question, line) for line in speaker_lines(notes).get(name, []))


def names_the_asker_for_themselves(question: str, answer: str, notes: str) -> bool:
    """True when `answer` is only the asker the `notes` (an answering prompt's text) name and the question speaks
    of the asker: "Who's picking me up from volleyball?" asked by Lucía is not answered by "Lucía", though her own
    note about volleyball names her."""
    asker = asker_of(notes)
    return asker is not None and speaks_of_the_asker(question) and names_only_a_speaker(answer, {asker.lower()})


def reasked_answer(
    llm: object,
    messages: list[Message],
    question: str,
    reply: str,
    *,
    max_tokens: int,
    temperature: float,
    concise: bool,
    clean: Callable[[str], str] = str.strip,
    speakers: Collection[str] = (),
) -> str | None:
    """The shown answer of a second try for `reply`, whose shown answer tells nothing (replaced_restatement checks
    that), with its words and `speakers` (lower-cased names) banned as the first word; None when the backend
    cannot ban them or the second answer restates the question or names only a speaker too."""
    pieces = reply.split() + [word for name in speakers for word in name.split()]
    words = sorted({word.strip(QUOTES_AND_PUNCTUATION) for word in pieces} - {""})
    again = reply_if_able(
        llm, "chat_avoiding_first_words", messages, words, max_tokens=max_tokens, temperature=temperature
    )
    if again is None:
        return None
    shown = shown_answer(question, clean(again), concise)
    if not shown.strip() or restates_question(question, shown) or names_only_a_speaker(shown, speakers):
        return None
    return shown
