"""The families a note may name where a question names one of their members: medicines and foods people are
allergic to.

A family tells the terminal "Doris is allergic to penicillin", "no anti-inflammatories with my blood pressure
tablets" or "Sam is allergic to tree nuts", and later asks about a member by its own name: "Can Doris have
amoxicillin for her chest?", "A neighbour brought almond croissants. Can Sam have one?". The 0.5B model does not know
that amoxicillin is a penicillin and answered "Yes". These tables let the answer checks (kiosk.llm.choices) read a
note about the family as a note about its member. They list common members by their usual names (generic and brand
names for medicines); they are a safety net for the checks, not medical or dietary advice, and a member they do not
list is simply not connected. A peanut is no tree nut ("fine with peanuts, only tree nuts" must not deny peanuts), and
"butter" and "cream" are left out of dairy: "peanut butter", "sun cream".
"""

from __future__ import annotations

from collections.abc import Iterable

from kiosk.stems import porter_stem


def _table(rows: tuple[tuple[str, str], ...]) -> dict[str, frozenset[str]]:
    """family stem, as a note names it -> member stems, as a question names them."""
    return {
        family: frozenset(porter_stem(member) for member in members.split())
        for families, members in rows
        for family in {porter_stem(name) for name in families.split()}
    }


_MEDICINES = _table(
    (
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
)
_FOODS = _table(
    (
        (
            "nut nuts",
            "almond almonds cashew cashews walnut walnuts pecan pecans pistachio pistachios hazelnut hazelnuts "
            "macadamia macadamias praline marzipan nutella frangipane",
        ),
        (
            "shellfish seafood",
            "prawn prawns shrimp shrimps crab crabs lobster lobsters mussel mussels scallop scallops oyster oysters "
            "clam clams langoustine langoustines crayfish",
        ),
        (
            "fish",
            "salmon tuna cod haddock mackerel sardine sardines trout anchovy anchovies pollock plaice hake",
        ),
        ("dairy lactose", "milk cheese yoghurt yogurt custard milkshake"),
        (
            "gluten wheat coeliac celiac",
            "bread pasta flour couscous biscuit biscuits crackers pizza noodles lasagne lasagna spaghetti macaroni "
            "cake cakes pastry pastries",
        ),
        ("egg eggs", "mayonnaise mayo meringue meringues omelette quiche"),
        ("sesame", "tahini hummus houmous halva"),
    )
)


MEDICINE_NAMES = frozenset(member for members in _MEDICINES.values() for member in members)
"""The stems of the medicines the tables list by their own names."""


def families_of(words: Iterable[str]) -> frozenset[str]:
    """The stems of the families (as notes name them) that the lower-case `words` are members of: "amoxicillin" ->
    the stem of "penicillin", "almonds" -> the stem of "nuts"."""
    named = {porter_stem(word) for word in words}
    return frozenset(family for table in (_MEDICINES, _FOODS) for family, members in table.items() if members & named)
