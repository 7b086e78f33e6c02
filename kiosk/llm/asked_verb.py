"""The verb a "who does it" question asks about, and the verbs a note says it with (issue #36).

"Who's getting my hearing aid batteries?" is answered by "Grace will pick up the hearing aid batteries": a note
says "pick", "collect", "fetch" or "get" for the same errand. "Who's doing the baking?" asks about any verb
("Maja will bake"). Used by kiosk.llm.doers (who the notes name) and kiosk.llm.unsupported (who they do not).
"""

from __future__ import annotations

import re

from kiosk.stems import porter_stem

# "Who is picking me up?", "Who's taking me?", "Who will drive us?": the answer is the one doing it.
ASKS_WHO_DOES = re.compile(r"\W*who(?:['’]s|\s+is|\s+are|\s+will|\s+can)\s+(?:be\s+)?(?P<verb>\w+)\b", re.IGNORECASE)
# Not "drive" for "collect": the one driving there is not the one collecting.
VERB_GROUPS = tuple(
    frozenset(porter_stem(word) for word in group.split())
    for group in ("pick collect fetch get", "take drive", "cover take")
)
ANY_VERB = frozenset({porter_stem("doing"), porter_stem("sorting"), porter_stem("handling")})
# The verb itself, not a word after "is": "Who is coming into bed 2?", "Who will collect Mia?", "Who's going to
# bring the cake?"; not "Who is on call?", "Who is Dev's nurse?".
_ASKED_VERB = re.compile(
    r"^\W*who(?:['’]s|\s+is|\s+are)\s+(?:going\s+to\s+(?P<going>[a-z]+)|(?P<ing>[a-z]+ing))\b"
    r"|^\W*who\s+(?:will|can)\s+(?P<base>[a-z]+)\b",
    re.IGNORECASE,
)
_NOT_A_VERB = frozenset({"be", "the", "a", "an", "there", "here", "on", "in", "at", "my", "your", "our", "going"})


def verbs_meant(verb: str) -> frozenset[str] | None:
    """The verbs (Porter stems) that say a question's `verb` (a stem) in a note: itself and those of its group
    ("pick", "collect", "fetch", "get"); None, any verb, for "do" ("Who's doing the baking?": "Maja will bake")."""
    if verb in ANY_VERB:
        return None
    return frozenset({verb}.union(*(group for group in VERB_GROUPS if verb in group)))


def asked_verbs(question: str) -> frozenset[str] | None:
    """The verbs (Porter stems) a note says what `question` asks who does with: "come" for "Who is coming into
    bed 2 tonight?"; None when it asks no verb, or any ("Who's doing the baking?")."""
    asked = _ASKED_VERB.match(question)
    if asked is None:
        return None
    verb = next(word for word in asked.group("going", "ing", "base") if word)
    if verb.lower() in _NOT_A_VERB:
        return None
    return verbs_meant(porter_stem(verb.lower()))
