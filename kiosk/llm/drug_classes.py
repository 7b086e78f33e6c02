"""The medicine families a note may name where a question names one of their members.

A family tells the terminal "Doris is allergic to penicillin" or "no anti-inflammatories with my blood pressure
tablets", and later asks about a drug by its own name: "Can Doris have amoxicillin for her chest?". The 0.5B model
does not know that amoxicillin is a penicillin and answered "Yes". This table lets the answer checks
(kiosk.llm.choices) read a note about the family as a note about its member. It lists common members by their
generic and usual brand names; it is a safety net for the checks, not medical advice, and a drug it does not list
is simply not connected.
"""

from __future__ import annotations

from collections.abc import Iterable

from kiosk.stems import porter_stem

# family stem, as a note names it -> members, as a question names them
_FAMILIES: dict[str, frozenset[str]] = {
    family: frozenset(members.split())
    for families, members in (
        (
            "penicillin penicillins",
            "amoxicillin amoxycillin ampicillin flucloxacillin co-amoxiclav augmentin phenoxymethylpenicillin "
            "piperacillin",
        ),
        (
            "inflammatories inflammatory nsaid nsaids",
            "ibuprofen naproxen diclofenac aspirin celecoxib mefenamic advil motrin nurofen aleve voltaren",
        ),
        ("opioid opioids opiate opiates", "codeine morphine tramadol oxycodone dihydrocodeine fentanyl"),
        ("sulfa sulpha sulfonamide sulphonamide sulfonamides", "co-trimoxazole sulfamethoxazole bactrim septrin"),
    )
    for family in {porter_stem(name) for name in families.split()}
}


def families_of(words: Iterable[str]) -> frozenset[str]:
    """The stems of the families (as notes name them) that the lower-case `words` are members of: "amoxicillin" ->
    the stem of "penicillin"."""
    named = set(words)
    return frozenset(family for family, members in _FAMILIES.items() if members & named)
