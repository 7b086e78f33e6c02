"""Who speaks in a note line and whom its words name (kiosk.llm.note_speakers)."""

from __future__ import annotations

from kiosk.llm.note_speakers import names_given, names_in, note_names, only_done_to, said_in, spoken_text


def test_names_are_speakers_authors_and_words_written_only_with_a_capital() -> None:
    lines = [
        "- (family group note by Ivan — not the asker's) Ivan: Gran's lunch is on Saturday at the Harbour Inn. "
        "Rosa is driving.",
        "Nora: For patients: the practice is open Monday to Friday, I'll be there. Remember to remember the lunch.",
    ]
    assert note_names(lines) == {"ivan", "gran", "harbour", "inn", "rosa", "nora"}


def test_the_names_a_question_gives_leave_out_i_and_its_contractions_weekdays_and_speakers() -> None:
    lines = ["Nora: The bins go out on Sunday night"]
    assert names_given("Who is doing Dr Okoye's tours on Tuesdays while I'm off?", lines) == {"dr", "okoye"}
    assert names_given("Can Nora and I'll ... Rosa come?", lines) == {"rosa"}


def test_the_one_a_who_question_s_verb_is_done_to_is_no_answer() -> None:
    """Asked who picks her up, "Kenji" stands only where he is the one picked up."""
    line = "Michiko: I'll pick Kenji up from soccer on Thursdays. Emi can do the Tuesdays."
    assert only_done_to("Who is picking me up from school today?", [line]) == {"kenji"}
    assert only_done_to("Who did Michiko pick up?", [line]) == frozenset()  # asks whom: the one picked up answers
    assert "kenji" not in only_done_to("Who is picking me up?", [line, "Kenji: I'll pick Yuna up today"])


def test_a_word_starting_a_sentence_is_no_name() -> None:
    assert names_in("A neighbour brought almond croissants. Can Théo have one?") == {"théo"}


def test_a_line_s_speaker_is_said_only_when_they_speak_of_themselves() -> None:
    assert "tom" in said_in(["Tom: I'll bring the cake"])
    assert "grace" not in said_in(["Grace: Leanne will sign for it"])
    assert (
        spoken_text("- (family group note by Tom — not the asker's) Tom: I'll bring the cake") == " I'll bring the cake"
    )
