"""Issue #34, points 1 and 5, re-run through the real `kiosk` command.

1. Tony writes a group note (`--scope group:family`) and a public note, then `kiosk users delete Tony`: are
   the notes still listed, still readable by id, and are their words still in the database bytes (the FTS
   index's stems, the DB, its -wal and -shm)?
5. Two `kiosk memory import` of one LoCoMo-shaped file for Colin at once: how many notes does Colin have?

People are added through the store API (no biometrics are needed for these attacks); every attack step is a
`kiosk` subprocess with KIOSK_HOME in `workdir`, fast construction (no LLM), the real text encoder.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bench.attacks.cli import KIOSK, checked, environment, kiosk
from bench.attacks.result import AttackResult

GROUP_NOTE = "Tony's cardiologist at QUOKKAVILLE hospital moved his appointment"
PUBLIC_NOTE = "Tony says the shed padlock code is ZANZIBARITE"
STEMS = ("quokkavil", "zanzibarit", "cardiologist")
TURNS = 90


def _add_people(env: dict[str, str], *names: str) -> None:
    from kiosk.config import load_config
    from kiosk.memory.open import open_store

    with open_store(load_config(path=None, environ=env)) as store:
        for name in names:
            store.add_user(name)


def _database_bytes(env: dict[str, str]) -> bytes:
    from kiosk.config import load_config

    db = load_config(path=None, environ=env).paths.db
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if not p.name.endswith(".bak"))


def _shared_notes_of_a_deleted_person(env: dict[str, str]) -> list[AttackResult]:
    _add_people(env, "Tony", "Colin")
    checked(kiosk(env, "groups", "add", "family"), "groups add")
    for name in ("Tony", "Colin"):
        checked(kiosk(env, "groups", "add-member", "family", name), "groups add-member")
    written = []
    for text, scope in ((GROUP_NOTE, "group:family"), (PUBLIC_NOTE, "public")):
        step = checked(kiosk(env, "remember", text, "--user", "Tony", "--scope", scope, "--json"), "remember")
        written.append(int(json.loads(step.stdout)["note"]["id"]))
    checked(kiosk(env, "remember", "Colin brings the cake", "--user", "Colin", "--scope", "group:family"), "")
    before = [stem for stem in STEMS if stem.encode() in _database_bytes(env)]

    checked(kiosk(env, "users", "delete", "Tony", "--yes"), "users delete")

    listed = []
    for scope in ("group:family", "public"):
        step = checked(kiosk(env, "memory", "list", "--scope", scope, "--json"), "memory list")
        listed += [note["content"] for note in json.loads(step.stdout)["notes"]]
    tony_listed = [text for text in listed if text in (GROUP_NOTE, PUBLIC_NOTE)]
    readable = [  # restore answers "no note with id N" for a missing note, "is not archived" for a stored one
        note_id
        for note_id in written
        if f"no note with id {note_id}" not in kiosk(env, "memory", "restore", str(note_id)).stderr
    ]
    after = [stem for stem in STEMS if stem.encode() in _database_bytes(env)]
    return [
        AttackResult(
            attack="`kiosk users delete Tony`, then list the group and public notes he wrote",
            expected="none of Tony's group or public notes listed; Colin's group note stays",
            observed=f"{len(tony_listed)} of Tony's 2 listed; listed: {listed}",
            broken=bool(tony_listed) or "Colin brings the cake" not in listed,
        ),
        AttackResult(
            attack="reach Tony's deleted group and public notes by id (`kiosk memory restore ID`)",
            expected="'no note with id N' for both",
            observed=f"{len(readable)} of 2 still found" if readable else "both gone (exit 2)",
            broken=bool(readable),
        ),
        AttackResult(
            attack="grep the DB, -wal and -shm for the stems of Tony's group and public notes after deletion",
            expected="no stem left (control: present before the deletion)",
            observed=f"before: {before}; after: {after or 'none'}",
            broken=bool(after) or not before,
        ),
    ]


def _locomo_file(path: Path) -> Path:
    conversation: dict[str, object] = {"speaker_a": "Colin", "speaker_b": "Tony"}
    for session in range(1, 4):
        conversation[f"session_{session}_date_time"] = f"10:15 am on {session + 3} June, 2023"
        conversation[f"session_{session}"] = [
            {
                "speaker": "Colin" if i % 2 == 0 else "Tony",
                "dia_id": f"D{session}:{i + 1}",
                "text": f"Session {session}, turn {i + 1}: the allotment had {session * 40 + i} marrows.",
            }
            for i in range(TURNS // 3)
        ]
    path.write_text(json.dumps([{"sample_id": "conv-attack", "conversation": conversation}]), encoding="utf-8")
    return path


def _concurrent_imports(env: dict[str, str], workdir: Path) -> AttackResult:
    _add_people(env, "Dora")
    path = _locomo_file(workdir / "conversation.json")
    command = [*KIOSK, "memory", "import", str(path), "--user", "Dora", "--construct", "fast", "--json"]
    running = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outputs = [process.communicate(timeout=300) for process in running]
    codes = [process.returncode for process in running]
    reports = [json.loads(out) if code == 0 else {} for (out, _), code in zip(outputs, codes, strict=True)]
    listed = checked(kiosk(env, "memory", "list", "--user", "Dora", "--json"), "memory list")
    total = int(json.loads(listed.stdout)["total"])
    added = [r.get("added") for r in reports]
    skipped = [r.get("skipped") for r in reports]
    return AttackResult(
        attack=f"two `kiosk memory import` of one {TURNS}-turn file for one person at the same moment",
        expected=f"{TURNS} notes; both imports exit 0",
        observed=f"{total} notes; exits {codes}, added {added}, skipped {skipped}",
        broken=total != TURNS or codes != [0, 0],
    )


def run(workdir: Path) -> list[AttackResult]:
    workdir.mkdir(parents=True, exist_ok=True)
    erasure_home, import_home = workdir / "erasure-home", workdir / "import-home"
    results = _shared_notes_of_a_deleted_person(environment(erasure_home))
    results.append(_concurrent_imports(environment(import_home), workdir))
    return results


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        for result in run(Path(scratch)):
            print(f"{'BROKEN' if result.broken else 'ok    '} {result.attack}\n       {result.observed}")
