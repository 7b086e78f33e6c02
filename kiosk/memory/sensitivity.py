"""Sensitive-note classification at construction, by rules.

A note is sensitive when it discloses one of: health (illness, injury, care, mental health, allergy,
pregnancy), finance (income, debts, amounts, bank or card details), credentials (passwords, PINs, codes),
location (a home address or exact whereabouts), third_party (another person's private life: a death,
divorce, arrest). One category per note, the first in CATEGORIES order that applies.

Rules are word patterns aimed at disclosures, not topics ("it's like therapy" is not a health note);
bench/results/sensitive.md measures them on 200 hand-labelled LoCoMo turns.
"""

from __future__ import annotations

import re
from typing import Literal

from kiosk.errors import DataError

Category = Literal["credentials", "health", "finance", "location", "third_party"]
CATEGORIES: tuple[Category, ...] = ("credentials", "health", "finance", "location", "third_party")

_RELATIVE = (
    r"(?:mom|mum|mother|dad|father|parents?|wife|husband|partner|son|daughter|kids?|child|brother|sister|"
    r"grand(?:ma|pa|mother|father)|aunt|uncle|cousin|friend|boss|neighbou?r|girlfriend|boyfriend|fianc[eé]e?)"
)

# Medicine names by their pharmacological stems (sertraline, warfarin, levothyroxine, ibuprofen, ...).
_DRUG = (
    r"\w{3,}(?:pril|olol|statin|azole|cillin|mycin|cycline|oxetine|traline|farin|thyroxine|prazole|sartan|"
    r"dipine|formin|asone|isone|olone|cetamol|profen|azepam|codeine|morphine|insulin)"
)

RULES: dict[Category, re.Pattern[str]] = {
    "credentials": re.compile(
        r"\b(?:(?<!no )password|passcode|passphrase|pin(?: code| number)|my pin|security code|login details|"
        r"username and password|account number|routing number|social security(?: number)?|ssn|"
        r"(?:door|alarm|gate|locker|safe|garage|entry|access|wifi|wi-fi) code|code is \d{3,}|combination (?:is|to)|"
        r"code (?:for|to|of) [^.]{1,40}?\b(?:is|is now|changes to|was) \d{3,}|spare key)\b",
        re.IGNORECASE,
    ),
    "health": re.compile(
        r"\b(?:doctors?|doc said|hospital|the er|emergency room|clinic|diagnos\w+|surgery|operation on|"
        r"injur(?:y|ies|ed)|injured myself|hurt (?:my|his|her) \w+|broke (?:my|his|her) \w+|physical therapy|"
        r"physio\w*|therapist|counsell?or said|medication|meds\b|prescri\w+|allerg(?:y|ies|ic)|asthma|diabet\w+|"
        r"cancer|tumou?r|chemo\w*|illness|got sick|been sick|feeling sick|fever|flu\b|covid|infection|migraine|"
        r"pregnan\w+|miscarriage|depress(?:ed|ion)|anxiety|panic attacks?|struggled with (?:my )?mental health|"
        r"mental health (?:issues|problems|struggles)|health (?:scare|issues?|problems?|risk|condition)|"
        r"blood pressure|heart (?:attack|condition|palpitations?)|stroke|gastritis|stomachache|symptoms?|"
        r"chronic|disorder|check-?up|recover(?:y|ing) from|rehab|(?:with|without|in) (?:no |any )?pain\b|"
        r"dairy-free is a must|lactose|gluten-free is a must|celiac|dentist|orthodontist|optician|gp|"
        r"inhaler|blood test|cardiolog\w+|\d+\s?(?:milligrams?|micrograms?|mg|mcg)|"
        rf"{_DRUG})\b",
        re.IGNORECASE,
    ),
    "finance": re.compile(
        r"(?:[$€£]\s?\d[\d,.]*(?:k|m)?\b|\b\d[\d,.]*\s?(?:dollars|euros?|pounds|bucks|usd|eur|gbp|kronor|kroner|"
        r"krona|kr|yen|francs?|zloty|rupees)\b|\b(?:salary|"
        r"my income|in debt|debts?\b|loan|mortgage|bank account|credit card|debit card|my savings|pay ?check|"
        r"paycheque|i owe|owes me|bankrupt\w*|tax return|can't afford|cannot afford|money-wise|endorsement deals?|"
        r"got a raise|pay rise|laid off|lost my job|unemployed)\b)",
        re.IGNORECASE,
    ),
    "location": re.compile(
        r"\b(?:\d{1,5}\s+(?:[A-Z][a-z]+\s){1,3}(?:street|st|avenue|ave|road|rd|lane|ln|drive|dr|boulevard|blvd|"
        r"court|ct|way|place|pl)\b|my (?:home )?address|i live (?:at|on)|we live (?:at|on)|zip ?code|postcode|"
        r"my (?:flat|house|apartment) is (?:at|on)|(?:calle|rue|via|avenida|rua) [^,.]{2,30}? \d{1,4}\b|"
        r"\w+(?:vägen|gatan|straße|strasse|weg|gade|laan) \d{1,4}\b|"
        r"apartment (?:number|no\.?)|apt\.? ?\d+|flat \d+|room \d{2,4}|(?:rented|bought|moved into) (?:an? |the )?"
        r"(?:apartment|flat|house|place) (?:on|at|near|not far from)|gate code|i'm staying at|we're staying at)\b",
        re.IGNORECASE,
    ),
    "third_party": re.compile(
        rf"\b(?:(?:my|his|her|our|your) {_RELATIVE}\b.{{0,40}}?\b(?:passed away|died|divorc\w+|arrested|in jail|"
        rf"in prison|cheat\w*|affair|fired|lost (?:his|her|their) job|broke up|split up|accident)|passed away|"
        r"funeral|sorry (?:about|for) (?:your|the) loss|sorry 'bout the accident)",
        re.IGNORECASE,
    ),
}


def validate_category(value: str | None) -> Category | None:
    """A stored or user-given category, checked; a typo is an error naming the allowed ones."""
    if value is None or value == "none":
        return None
    if value not in CATEGORIES:
        raise DataError(f"unknown sensitivity '{value}'", f"use one of {', '.join(CATEGORIES)} or none")
    return value


def classify_rules(text: str) -> Category | None:
    """The first category whose rule matches, in CATEGORIES order; None when no rule does."""
    for category in CATEGORIES:
        if RULES[category].search(text):
            return category
    return None
