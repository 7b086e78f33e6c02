"""A yes/no or either/or answer the notes about the question contradict becomes their own choice, or "I don't know"
when they make none (kiosk.llm.choices)."""

from __future__ import annotations

import pytest

from kiosk.llm.choices import checked_choice, contradicted, notes_choice
from kiosk.llm.prompts import UNKNOWN_ANSWER
from tests.doubles import answer_prompt

NOTES = """Notes of Nora, oldest first:
<notes>
[3 October 2026]
Nora: The vet says Pepper gets her meloxicam with her dinner, never on an empty stomach
Nora: My eye drops go in morning and night
Nora: Tom has football training every Monday and Wednesday at half five
[9 October 2026]
Nora: Actually the dentist moved to Friday (16 October 2026) at 9
Nora: The GP says no aspirin with the warfarin, paracetamol is fine
Nora: I'm allergic to latex, so the nitrile gloves for me
Nora: The lift by the car park is out until Monday (12 October 2026)
Nora: Dr Okoye is on annual leave until the 20th (20 October 2026)
Nora: The amoxicillin is three times a day after food
Nora: Gran's lunch is on Saturday at 1
Nora: Doris is allergic to penicillin, it's on her wristband
Nora: Keep taking the statin at night like before
[10 October 2026]
Nora: Actually we're moving Gran's lunch to Sunday, because Ivan works on Saturday
</notes>"""


def notes(question: str) -> str:
    return answer_prompt(NOTES, question)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Does Pepper get the meloxicam with dinner or at night?", "At night"),  # the eye drops' night
        ("Does Tom have football on Tuesdays?", "Yes"),  # Monday and Wednesday
        ("Is the dentist on Friday?", "No"),  # the note names Friday and no other day
        ("Can I take an aspirin with my warfarin?", "Yes, you can"),  # "no aspirin with the warfarin"
        ("Can I use the latex gloves in the treatment room?", "Yes"),  # "allergic to latex"
        ("Is the lift by the car park working?", "Yes"),  # "is out until Monday"
        ("Is Dr Okoye in this Wednesday?", "Yes"),  # "on annual leave"
        ("Is Dr Okoye's clinic open this Wednesday?", "Yes"),  # the possessive names her too
        ("The amoxicillin, is that before food or after?", "Before food"),  # "before" and "after" the options
        ("Is Gran's lunch on Saturday or Sunday?", "Saturday"),  # moved to Sunday; Saturday is only the reason
        ("Can Doris have amoxicillin for her chest?", "Yes"),  # amoxicillin is a penicillin
        ("Do I still take the statin?", "No"),  # "keep taking the statin"
        ("Does Maja have handball on Saturday?", "Yes"),  # no line about handball: a guess
    ],
)
def test_a_choice_the_notes_about_the_question_contradict_is_withdrawn(question: str, answer: str) -> None:
    assert contradicted(question, answer, notes(question))
    assert checked_choice(question, answer, notes(question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Does Pepper get the meloxicam with dinner or at night?", "With dinner"),
        ("Does Tom have football on Wednesdays?", "Yes"),
        ("Does Tom have football on Tuesdays?", "No, Monday and Wednesday"),
        ("Is the dentist on Friday?", "Yes"),
        ("Is the dentist on Thursday?", "No"),  # the note names Friday only: a "no" it does not contradict
        ("Do my eye drops go in in the morning or at night?", "At night"),  # the note holds both options
        ("Does Pepper like the vet?", "No"),  # no day, month or number asked: nothing to judge
        ("Does Tom have football on Tuesdays?", UNKNOWN_ANSWER),
        ("When does Tom have football?", "Tuesday"),  # not a choice: kiosk.llm.unsupported judges it
        ("Can I take an aspirin with my warfarin?", "No"),  # a "no" is never withdrawn for a denial
        ("Can I take paracetamol?", "Yes"),  # the denial is about the aspirin
        ("Does Pepper get her meloxicam with dinner?", "Yes"),  # "never" there is about the empty stomach
        ("Am I allergic to latex?", "Yes"),  # the question asks about the denial itself
        ("Is the lift by the car park still out?", "Yes"),
        ("Is Dr Okoye in this Wednesday?", "No"),
        ("Did I ever take aspirin with the warfarin?", "Yes"),  # about the past: the denial is a rule for now
        ("The amoxicillin, is that before food or after?", "After food"),
        ("Is Gran's lunch on Saturday or Sunday?", "Sunday"),
        ("Can Doris have amoxicillin for her chest?", "No"),
        ("Can Doris have paracetamol?", "Yes"),  # no family of paracetamol is named
        ("Do I still take the statin?", "Yes"),
    ],
)
def test_a_choice_the_notes_do_not_contradict_is_kept(question: str, answer: str) -> None:
    assert checked_choice(question, answer, notes(question)) is None


CARE = """Notes of Bisi, oldest first:
<notes>
[5 October 2026]
Bisi: Dad's morning tablets: bisoprolol 2.5 mg and apixaban 2.5 mg with his breakfast
Bisi: Dad is allergic to penicillin, it's on his GP record
Bisi: Aqua aerobics is on Wednesdays at 10
[30 October 2026]
Bisi: Back from the GP, no ibuprofen for his knee, paracetamol only
Bisi: The GP stopped the bisoprolol
[9 November 2026]
Bisi: Aqua aerobics moved from Wednesday to Thursday this week, same time
</notes>"""


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("My knee is aching. Can I take some ibuprofen?", "Yes"),  # the situation first, the question last
        ("The doctor wants to give Dad amoxicillin. Is that all right?", "Yes, that's all right"),
        ("Is aqua aerobics on Wednesday or Thursday this week?", "Wednesday"),  # moved from Wednesday
        ("Is Dad still on the apixaban?", "No"),  # no line says the apixaban ended
    ],
)
def test_a_choice_told_with_its_situation_moved_from_or_still_so_is_withdrawn(question: str, answer: str) -> None:
    assert checked_choice(question, answer, answer_prompt(CARE, question)) == UNKNOWN_ANSWER


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("My knee is aching. Can I take some paracetamol?", "Yes"),
        ("Is aqua aerobics on Wednesday or Thursday this week?", "Thursday"),
        ("Is Dad still on the bisoprolol?", "No"),  # "stopped the bisoprolol"
        ("Is Dad still on the apixaban?", "Yes"),
    ],
)
def test_a_choice_the_notes_bear_out_is_kept(question: str, answer: str) -> None:
    assert checked_choice(question, answer, answer_prompt(CARE, question)) is None


@pytest.mark.parametrize(
    ("question", "answer", "chosen"),
    [
        ("Does Pepper get the meloxicam with dinner or at night?", "At night", "With dinner"),
        ("Does Tom have football on Tuesdays?", "Yes", "No"),  # Monday and Wednesday
        ("Can I take an aspirin with my warfarin?", "Yes, you can", "No"),  # "no aspirin with the warfarin"
        ("Can I use the latex gloves in the treatment room?", "Yes", "No"),  # "allergic to latex"
        ("Can I use the latex gloves in the treatment room?", "The latex gloves", "No"),  # the echo says yes
        ("Is the lift by the car park working?", "Yes", "No"),  # "is out until Monday"
        ("Is Dr Okoye in this Wednesday?", "Yes", "No"),  # "on annual leave": her name is the thing asked of
        ("The amoxicillin, is that before food or after?", "Before food", "After food"),
        ("Is Gran's lunch on Saturday or Sunday?", "Saturday", "Sunday"),  # moved to Sunday
        ("Can Doris have amoxicillin for her chest?", "Yes", "No"),  # amoxicillin is a penicillin
        ("Does Pepper get the meloxicam with dinner or on an empty stomach?", "On an empty stomach", "With dinner"),
    ],
)
def test_the_notes_own_choice_replaces_one_they_contradict(question: str, answer: str, chosen: str) -> None:
    assert notes_choice(question, answer, notes(question)) == chosen


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Is the dentist on Friday?", "No"),  # naming Friday does not say "yes"
        ("Is the dentist on Friday?", "On Friday"),  # an echo confirming it, which the notes bear out
        ("Do I still take the statin?", "No"),  # "keep taking the statin": a "yes" is left unsaid
        ("What did the vet say about Pepper, dinner or night?", "Night"),  # not asked as a choice
        ("Does Pepper get the meloxicam with dinner or at night?", "With dinner"),  # not contradicted
    ],
)
def test_no_choice_is_made_for_a_no_the_notes_contradict_or_an_answer_they_bear_out(question: str, answer: str) -> None:
    assert notes_choice(question, answer, notes(question)) is None


def test_a_no_the_notes_contradict_is_still_withdrawn_not_turned_into_yes() -> None:
    question = "Is Dad still on the apixaban?"
    assert notes_choice(question, "No", answer_prompt(CARE, question)) is None
    assert checked_choice(question, "No", answer_prompt(CARE, question)) == UNKNOWN_ANSWER


SHARED_WORD = """Notes of Mum, oldest first:
<notes>
[3 October 2026]
Mum: The amoxicillin is three times a day, finish the course
Mum: No food after 8 pm on Thursday, it's the scan on Friday
Mum: Food shopping is on Saturdays
</notes>"""


def test_a_choice_is_made_only_from_the_lines_about_the_question_own_thing() -> None:
    """Only "food" ties the scan's line to the amoxicillin: it withdraws "before food", it does not answer."""
    question = "The amoxicillin, is that before food or after?"
    prompt = answer_prompt(SHARED_WORD, question)
    assert contradicted(question, "Before food", prompt)
    assert notes_choice(question, "Before food", prompt) is None


HOUSE = """Notes of Claire, oldest first:
<notes>
[28 October 2026]
Théo: Hockey practice is Tuesdays at half past five at the arena.
Marc: The garage door code is 4471.
Marc: Never give Biscuit grapes or raisins. The vet said they can wreck a dog's kidneys.
Marc: Paid the hydro bill, the internet one is still to pay.
Marc: Mum's Lantus is 10 units at bedtime.
[2 November 2026]
Théo: Coach says hockey practice moved to Wednesdays from this week, same time.
Marc: I changed the garage door code to 8093.
[6 November 2026]
Marc: Dr Nguyen put her Lantus up from 10 to 12 units at bedtime, starting tonight.
[10 November 2026]
Claire: Biscuit's vet appointment is on Saturday the 14th. No food for him after eight that morning.
</notes>"""


@pytest.mark.parametrize(
    ("question", "answer", "chosen"),
    [
        ("Is Théo's hockey practice still on Tuesdays?", "Yes", "No"),  # moved to Wednesdays
        ("Is the garage code still 4471?", "Yes", "No"),  # changed to 8093
        ("How many units of Lantus does Mum get at bedtime now?", "10 units", "12 units"),  # up from 10 to 12
        ("How many units of Lantus does Mum get at bedtime now?", "10", "12"),
    ],
)
def test_a_value_a_later_line_changed_gets_the_notes_new_one(question: str, answer: str, chosen: str) -> None:
    assert notes_choice(question, answer, answer_prompt(HOUSE, question)) == chosen


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Is Théo's hockey practice still on Wednesdays?", "Yes"),
        ("Is the garage code still 8093?", "Yes"),
        ("How many units of Lantus does Mum get at bedtime now?", "12 units"),
        ("When is Biscuit's vet appointment?", "12 November"),  # a day, not the units changed from 10 to 12
        # "can" is no thing of the question: the grapes line ("they can wreck") is not about Biscuit's breakfast
        ("Can Biscuit have his breakfast on Saturday morning?", "Yes"),
    ],
)
def test_a_value_the_notes_bear_out_gets_no_other(question: str, answer: str) -> None:
    assert notes_choice(question, answer, answer_prompt(HOUSE, question)) is None


@pytest.mark.parametrize("answer", ["Yes", "No", "Claire is going for a job interview."])
def test_a_yes_or_no_no_line_is_about_is_withdrawn(answer: str) -> None:
    """Nothing in the notes is about a job or an interview: any yes or no is a guess."""
    question = "Is Claire going for a job interview?"
    prompt = answer_prompt(HOUSE, question)
    assert checked_choice(question, answer, prompt) == UNKNOWN_ANSWER
    assert notes_choice(question, answer, prompt) is None


def test_a_weekday_or_a_medicine_s_family_makes_a_line_about_the_question() -> None:
    question = "Is the vet appointment on Saturday?"
    assert checked_choice(question, "Yes", answer_prompt(HOUSE, question)) is None
    question = "Can Doris have amoxicillin for her chest?"
    assert notes_choice(question, "Yes", notes(question)) == "No"  # "allergic to penicillin"


PICK_UP = """Notes of Claire, oldest first:
<notes>
[2 November 2026]
Marc: Marc will pick Théo up from hockey on Wednesdays. Claire does the mornings.
Claire: I'll take Maman to the day centre on Thursdays.
</notes>"""


def test_a_yes_to_whether_the_asker_does_it_when_another_is_said_to_is_no() -> None:
    question = "Am I picking Théo up from hockey tomorrow?"
    assert notes_choice(question, "Yes, I am picking Théo up", answer_prompt(PICK_UP, question)) == "No"


@pytest.mark.parametrize(
    "question",
    [
        "Am I taking Maman to the day centre on Thursday?",  # the asker's own line says so
        "Can I pick Théo up from hockey tomorrow?",  # asks leave, not whose turn it is
    ],
)
def test_a_yes_the_asker_is_said_to_do_or_that_asks_leave_is_kept(question: str) -> None:
    assert notes_choice(question, "Yes", answer_prompt(PICK_UP, question)) is None


ALLERGY = """Notes of Claire, oldest first:
<notes>
[27 October 2026]
Claire: The allergist says Théo is fine with peanuts. It's only tree nuts for him: cashews, almonds, walnuts.
</notes>"""


def test_a_yes_to_an_allergy_a_line_says_they_are_fine_with_is_no() -> None:
    question = "Is Théo allergic to peanuts?"
    assert notes_choice(question, "Yes", answer_prompt(ALLERGY, question)) == "No"
    question = "Is Théo allergic to cashews?"
    assert notes_choice(question, "Yes", answer_prompt(ALLERGY, question)) is None


ALLERGIC = """Notes of Carmen, oldest first:
<notes>
[2 October 2026]
Carmen: I'm allergic to shellfish, prawns especially. The EpiPen is in my handbag.
Carmen: The lift by the car park is out until Monday (5 October 2026)
Carmen: I'm allergic to sulfa drugs
</notes>"""


def test_an_unknown_to_a_yes_or_no_a_line_refuses_is_the_notes_no() -> None:
    question = "Can I have the prawns at the Ruiz's on Friday?"
    assert notes_choice(question, "I don't know.", answer_prompt(ALLERGIC, question)) == "No"


@pytest.mark.parametrize(
    "question",
    [
        "Can I use the lift by the car park?",  # "out until Monday" may have ended: not read for an unknown
        "Am I allergic to sulfa?",  # the question holds the denying word: "No" would be wrong
        "Can I have the chicken at the Ruiz's?",  # no line about it
    ],
)
def test_an_unknown_stays_unknown_without_a_refusing_line_about_it(question: str) -> None:
    assert notes_choice(question, "I don't know.", answer_prompt(ALLERGIC, question)) is None


def test_a_yes_told_with_its_situation_after_the_question_is_judged_by_the_question() -> None:
    """The weight is told after the question: "twenty" against the physio's "five kilos" is a contradicted yes."""
    question = "Can I carry the new bookcase boxes up the stairs this week? They're about twenty kilos."
    physio = """Notes of Erik, oldest first:
<notes>
[7 October 2026]
Erik: Physio said do the band exercises every morning, and nothing heavier than five kilos for two weeks.
</notes>"""
    answer = "Yes, I can carry the new bookcase boxes up the stairs this week."
    assert notes_choice(question, answer, answer_prompt(physio, question)) == "No"


def test_a_negated_echo_is_a_no_and_withdrawn_when_no_line_is_about_it() -> None:
    """A made-up "no" about another person's private matter, told as the question's words negated."""
    question = "Is Nadia looking for another job?"
    recycling = (
        "Notes of Karim, oldest first:\n<notes>\n[9 November 2026]\nKarim: Recycling is Tuesday nights now.\n</notes>"
    )
    answer = "Nadia is not looking for another job."
    assert checked_choice(question, answer, answer_prompt(recycling, question)) == UNKNOWN_ANSWER


PHYSIO = """Notes of Georges, oldest first:
<notes>
[2 November 2026]
Georges: The physiotherapist comes on Tuesdays and Fridays at ten.
[12 November 2026]
Georges: The physio moved Friday's session to Saturday morning at ten, this week only.
Georges: Actually the dentist moved from Thursday to Friday.
</notes>"""


@pytest.mark.parametrize(
    ("question", "chosen"),
    [
        ("Is the physio coming on Friday this week?", "No"),  # moved from Friday ("Friday's session") to Saturday
        ("Is the dentist on Friday?", None),  # moved to Friday: "from Thursday" is where it left
    ],
)
def test_a_yes_to_a_day_a_line_moved_the_thing_away_from_is_no(question: str, chosen: str | None) -> None:
    assert notes_choice(question, "Yes", answer_prompt(PHYSIO, question)) == chosen


KITCHEN = """Notes of Lina, oldest first:
<notes>
[31 October 2026]
Lina: My Tresiba dose is 18 units every evening at nine. NovoRapid with meals, by the carbs.
[7 November 2026]
Lina: Dr Berthier wants my Tresiba up to 20 units from tonight (7 November 2026), my morning sugars are too high.
[9 November 2026]
Lina: Recycling is Tuesday nights now, household rubbish Monday and Thursday.
</notes>"""


@pytest.mark.parametrize(
    ("question", "answer", "chosen"),
    [
        # "morning" is in a line about the Tresiba, but in a clause about the sugars: the change is to 20 units
        ("Is my Tresiba in the morning or the evening?", "morning", "The evening"),
        # Monday is in the recycling's line, but the rubbish's
        ("Is the recycling on Monday?", "Yes", "No"),
    ],
)
def test_a_choice_is_read_from_the_clause_naming_its_own_thing(question: str, answer: str, chosen: str) -> None:
    assert notes_choice(question, answer, answer_prompt(KITCHEN, question)) == chosen
    assert notes_choice(question, chosen, answer_prompt(KITCHEN, question)) is None


def test_a_note_about_a_food_family_denies_its_member() -> None:
    notes = """Notes of Nora, oldest first:
<notes>
[3 October 2026]
Nora: Sam is allergic to tree nuts, his EpiPen is in his school bag.
Nora: Sam is fine with peanuts.
</notes>"""
    question = "A neighbour brought almond croissants. Can Sam have one?"
    assert notes_choice(question, "Yes", answer_prompt(notes, question)) == "No"
    peanuts = "Can Sam have one of the peanut butter cookies?"
    assert notes_choice(peanuts, "Yes", answer_prompt(notes, peanuts)) is None


def test_a_food_an_allergy_line_names_without_saying_it_is_fine_is_a_no() -> None:
    notes = """Notes of Claire, oldest first:
<notes>
[3 October 2026]
Claire: The allergist says Théo is fine with peanuts. It's only tree nuts for him: cashews, almonds, walnuts.
</notes>"""
    question = "A neighbour brought almond croissants. Can Théo have one?"
    assert notes_choice(question, "Théo can have almond croissants.", answer_prompt(notes, question)) == "No"
    peanuts = "Can Théo have one of the peanut butter cookies?"
    assert notes_choice(peanuts, "Yes", answer_prompt(notes, peanuts)) is None
    someone_else = "Can Maya have one of the almond croissants?"
    assert notes_choice(someone_else, "Yes", answer_prompt(notes, someone_else)) is None


PENICILLIN = """Notes of Ciaran, oldest first:
<notes>
[5 October 2026]
Ciaran: Remember I'm allergic to penicillin, my face swells right up.
</notes>"""


@pytest.mark.parametrize(
    ("question", "choice"),
    [
        ("The doctor wants to give me amoxicillin for my chest. Is that safe for me?", "No"),
        ("Can I take flucloxacillin for the cut on my hand?", "No"),
        ("The doctor wants to give me ibuprofen for my knee. Is that safe for me?", None),
    ],
)
def test_a_medicine_whose_family_the_asker_is_allergic_to_is_not_safe(question: str, choice: str | None) -> None:
    assert notes_choice(question, "Yes", answer_prompt(PENICILLIN, question)) == choice


PLAIN = """Notes of Sofia, oldest first:
<notes>
[20 October 2026]
Sofia: The GP says while I'm pregnant it's paracetamol only for headaches, no ibuprofen and no aspirin.
[24 October 2026]
Sofia: The electricity bill is 412 dollars, due on the 6th of November. Luca, can you pay it?
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[23 October 2026]
- (family group note by Luca — not the asker's) Luca: Bins: the red general waste goes out every Sunday night.
[26 October 2026]
- (parents group note by Luca — not the asker's) Luca: Paid the electricity bill tonight (26 October 2026).
</notes>"""


@pytest.mark.parametrize(
    "question",
    [
        "Has Luca paid the electricity bill?",  # his own line says it, in so many words
        "Is paracetamol OK for my headache?",  # the "no" of that line is for ibuprofen
        "Does the general waste go out on Sunday?",
    ],
)
def test_a_no_to_what_a_line_says_plainly_is_withdrawn(question: str) -> None:
    assert contradicted(question, "No.", answer_prompt(PLAIN, question))


@pytest.mark.parametrize(
    "question",
    [
        "Has Sofia paid the electricity bill?",  # the line that says it is Luca's
        "Is ibuprofen OK for my headache?",  # a clause about it negates
        "Does the general waste go out on Monday?",  # the line names another day
    ],
)
def test_a_no_the_lines_do_not_plainly_contradict_is_kept(question: str) -> None:
    assert not contradicted(question, "No.", answer_prompt(PLAIN, question))


DONE = """Notes of Tomasz, oldest first:
<notes>
[27 October 2026]
Tomasz: Stan had a fall in the bathroom tonight (27 October 2026), no injury.
Tomasz: Marco needs 120 hours of driving practice, so Dad has to be in the car with him every time.
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[13 November 2026]
- (care group note by Jasmine — not the asker's) Jasmine: The grab rail is loose, the handyman comes Monday to fix it.
[14 November 2026]
- (care group note by Ania — not the asker's) Ania: The gas bill is due on the 30th.
[20 November 2026]
- (care group note by Deb — not the asker's) Deb: Flu shots for both of them on Tuesday the 24th (24 November 2026).
- (care group note by Deb — not the asker's) Deb: Nobody has rung the plumber about the dripping tap.
</notes>"""


@pytest.mark.parametrize(
    ("question", "withdrawn"),
    [
        ("Is Stan's flu shot booked?", True),  # the notes hold the shots, not that they are not booked
        ("Did Stan have another fall this week?", True),  # only an earlier fall
        ("Has the grab rail been fixed?", False),  # "loose", the handyman "comes Monday to fix it"
        ("Has Ania paid the gas bill?", False),  # "due on the 30th"
        ("Has anyone rung the plumber yet?", False),  # "Nobody has rung the plumber"
        ("Have I got to ring the plumber?", False),  # a duty, not whether it was done
        ("Is Marco's driving test booked?", True),  # the notes speak of practice, never of a test
        ("Has Marco had his driving practice?", False),  # "needs 120 hours of driving practice"
    ],
)
def test_a_no_to_whether_something_was_done_needs_a_line_saying_it_is_not(question: str, withdrawn: bool) -> None:
    assert contradicted(question, "No.", answer_prompt(DONE, question)) is withdrawn


@pytest.mark.parametrize(
    ("question", "withdrawn"),
    [
        ("Has Sofia paid the electricity bill?", False),  # the line that says it was paid is Luca's
        ("Is the gas bill paid?", True),  # no line says anything of the gas bill
    ],
)
def test_a_no_to_whether_someone_did_it_stands_when_another_did(question: str, withdrawn: bool) -> None:
    assert contradicted(question, "No.", answer_prompt(PLAIN, question)) is withdrawn


def test_a_dish_of_a_family_a_coeliac_line_names_is_a_no() -> None:
    notes = """Notes of Giulia, oldest first:
<notes>
[13 November 2026]
Giulia: Can I have the leftover lasagne for lunch tomorrow?
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[19 October 2026]
- (family group note by Sofia — not the asker's) Sofia: Giulia is coeliac, so nothing with gluten for her.
</notes>"""
    question = "Can I have the leftover lasagne tomorrow?"
    assert notes_choice(question, "Yes", answer_prompt(notes, question)) == "No"


def test_a_span_of_days_is_no_change_that_keeps_a_no() -> None:
    notes = """Notes of Marco, oldest first:
<notes>
[5 November 2026]
Marco: School camp is from Wednesday the 18th to Friday the 20th. I have to take the EpiPen and the spare.
</notes>"""
    question = "Do I need to take my EpiPen to camp?"
    assert contradicted(question, "No.", answer_prompt(notes, question))


def test_a_no_to_whether_something_is_still_so_is_left_to_the_still_rule() -> None:
    notes = """Notes of Bisi, oldest first:
<notes>
[2 November 2026]
Bisi: Shopping for Dad: sugar-free squash, plantain, and new slippers with a back to them.
Bisi: Dad's GP is Dr Shah, and Dad's pharmacy is Boots.
</notes>

Notes other people shared (data, not the asker's own), oldest first:
<notes>
[6 November 2026]
- (family group note by Tunde — not the asker's) Tunde: Got Grandad his new slippers. They're by his chair.
</notes>"""
    question = "Do we still need to get Dad new slippers?"
    assert not contradicted(question, "No, we don't need", answer_prompt(notes, question))


def test_a_line_saying_someone_else_does_it_contradicts_no_no() -> None:
    notes = """Notes of Tomasz, oldest first:
<notes>
[9 November 2026]
Tomasz: Swapping with Jasmine this week: I'm doing the morning visit on Thursday the 12th, she's doing the evening one.
Tomasz: The visit on Tuesday is at seven as usual.
</notes>"""
    question = "Is Jasmine doing the morning visit on Thursday?"
    assert not contradicted(question, "No.", answer_prompt(notes, question))


def test_the_part_of_a_line_about_the_thing_asked_gives_its_option() -> None:
    tablets = """Notes of Doris, oldest first:
<notes>
[1 October 2026]
Doris: My tablets are the bisoprolol in the morning and the furosemide water tablet at lunchtime.
</notes>"""
    question = "Do I take the water tablet in the morning or at lunchtime?"
    said = answer_prompt(tablets, question)
    assert notes_choice(question, "The water tablet is in the morning.", said) == "At lunchtime"
    assert notes_choice(question, "At lunchtime", said) is None
    assert notes_choice("Do I take the bisoprolol in the morning or at lunchtime?", "At lunchtime", said) == (
        "In the morning"
    )


SILVA = """Notes of Rui, oldest first:
<notes>
[2 November 2026]
Rui: Bins: paper and cardboard go out on Wednesday night, general rubbish every night except Saturday.
[11 November 2026]
Rui: Coach says there's no match this Saturday, the pitch is flooded. Training is still on.
[19 November 2026]
Rui: The cardiologist says no ibuprofen for Pai. Paracetamol is fine for his knee.
[20 November 2026]
Rui: The boiler man is coming on Tuesday the 24th in the morning to fix the boiler.
</notes>"""


@pytest.mark.parametrize(
    ("question", "answer", "withdrawn"),
    [
        ("Is training still on this week?", "No.", True),  # "Training is still on"
        ("Is the match still on this Saturday?", "No.", False),  # "no match this Saturday"
        ("Does the paper recycling go out on Wednesday night?", "No.", True),  # its clause names Wednesday only
        ("Does the paper recycling go out on Thursday night?", "No.", False),
        ("Can Avô have paracetamol for his knee?", "No.", True),  # no line holds "Avô"; "Paracetamol is fine"
        ("Can Avô have ibuprofen for his knee?", "No.", False),
        ("Is the boiler fixed?", "Yes", True),  # the boiler man is still to come
        ("Has the vet rung about the cat's blood test?", "Yes", True),  # no line holds a blood test
        ("Has the boiler man been?", "No.", False),  # "is coming on Tuesday"
    ],
)
def test_a_choice_the_closest_lines_contradict_is_withdrawn(question: str, answer: str, withdrawn: bool) -> None:
    assert contradicted(question, answer, answer_prompt(SILVA, question)) is withdrawn
