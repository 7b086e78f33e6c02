"""Issue #34, points 4 and 6, re-run through the real `kiosk` command: a person's files at rest.

4. One byte flipped in Tony's sealed template and in Colin's sealed note (as anyone holding the file could):
   Colin still asks and lists, Tony's notes still list, everyone is listed, Colin can delete the damaged note,
   and `kiosk doctor` names both rows with the command that repairs them.
6. The modes of the database, its -wal and -shm, the data and log directories; the raw database bytes grepped
   for the stems of a note the kiosk classed as credentials; a world-writable key file and key directory; a
   deleted key file.

People are enrolled through the store API with vectors made for the active face encoder (the attack is on the
files, not on enrollment); notes are written and every attack step is run by `kiosk` subprocesses.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from bench.attacks.cli import checked, environment, kiosk
from bench.attacks.result import AttackResult

SECRET = "My locker code is zebra 7741."
DOCTOR_DATABASE_ONLY = ["--skip", "models", "--skip", "llm build", "--skip", "calibration", "--skip", "disk"]
DOCTOR_DATABASE_ONLY += ["--skip", "cameras"]


def _line(step: subprocess.CompletedProcess[str]) -> str:
    return f"exit {step.returncode}" + (
        f", {step.stderr.strip().splitlines()[-1][:160]}" if step.stderr.strip() else ""
    )


def _enrol(env: dict[str, str], workdir: Path) -> dict[str, Path]:
    from kiosk.calibration.active import calibration_path
    from kiosk.config import load_config
    from kiosk.memory.open import open_store

    config = load_config(path=None, environ=env)
    sha = json.loads(calibration_path(config, "face").read_text(encoding="utf-8"))["encoder"]["sha256"]
    rng = np.random.default_rng(346)
    probes = {}
    with open_store(config) as store:
        for name in ("Colin", "Tony"):
            vector = rng.standard_normal(640).astype(np.float32)
            vector /= np.linalg.norm(vector)
            store.set_templates(store.add_user(name).id, "face", vector[None, :], sha)
            probes[name] = workdir / f"{name}.npy"
            np.save(probes[name], vector)
    return probes


def _remember(env: dict[str, str], name: str, text: str) -> dict[str, Any]:
    written = kiosk(env, "remember", text, "--user", name, "--json")
    checked(written, f"remember for {name}")
    note: dict[str, Any] = json.loads(written.stdout)["note"]
    return note


def _mode(path: Path) -> str:
    return f"{stat.S_IMODE(path.stat().st_mode):o}" if path.exists() else "absent"


def _file_modes(env: dict[str, str], home: Path) -> AttackResult:
    """-wal and -shm exist while a connection is open: one is held open here, as a library user would."""
    from kiosk.config import load_config
    from kiosk.memory.open import open_store

    config = load_config(path=None, environ=env)
    db = config.paths.db
    previous = os.umask(0o022)  # a program using the store as a library, with the usual umask
    try:
        with open_store(config) as store:
            store.add_group("modes-probe")
            modes = {p.name: _mode(p) for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm"))}
    finally:
        os.umask(previous)
    modes |= {"data dir": _mode(home), "log dir": _mode(config.paths.logs)}
    for log in sorted(config.paths.logs.glob("*.log")):
        modes[log.name] = _mode(log)
    wanted = {name: ("700" if name.endswith("dir") else "600") for name in modes}
    return AttackResult(
        attack="modes of memory.db, -wal, -shm, the data and log directories and logs after CLI and library use",
        expected="files 600, directories 700",
        observed=", ".join(f"{name} {mode}" for name, mode in modes.items()),
        broken=modes != wanted,
    )


def _sensitive_stems(env: dict[str, str], secret_note: dict[str, Any]) -> AttackResult:
    from kiosk.config import load_config

    db = load_config(path=None, environ=env).paths.db
    raw = b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())
    found = [stem for stem in ("zebra", "7741", "locker") if stem.encode() in raw]
    return AttackResult(
        attack=f"grep the database bytes for the stems of '{SECRET}' (classed {secret_note['sensitivity']})",
        expected="no stem of a sensitive sealed note in the file (it is found by its vector only)",
        observed=f"found {found}" if found else "none of zebra, 7741, locker in the database or WAL",
        broken=bool(found) or secret_note["sensitivity"] is None,
    )


def _flip(db: Path, table: str, column: str, row_id: int) -> None:
    conn = apsw.Connection(str(db))
    try:
        blob = bytes(next(conn.execute(f"SELECT {column} FROM {table} WHERE id = ?", (row_id,)))[0])
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE id = ?", (blob[:-1] + bytes([blob[-1] ^ 1]), row_id))
    finally:
        conn.close()


def _sealed_row_faults(env: dict[str, str], probes: dict[str, Path], colin_note: dict[str, Any]) -> AttackResult:
    from kiosk.config import load_config

    db = load_config(path=None, environ=env).paths.db
    conn = apsw.Connection(str(db))
    try:
        tony_template = int(
            next(conn.execute("SELECT t.id FROM templates t JOIN users u ON u.id = t.user_id WHERE u.name = 'Tony'"))[0]
        )
    finally:
        conn.close()
    _flip(db, "templates", "vector", tony_template)
    _flip(db, "notes", "content", int(colin_note["id"]))
    steps = {
        "Colin ask": kiosk(
            env, "ask", "What is my dog called?", "--probe-npy", str(probes["Colin"]), "--no-llm", "--json"
        ),
        "users list": kiosk(env, "users", "list", "--json"),
        "Colin memory list": kiosk(env, "memory", "list", "--user", "Colin", "--json"),
        "Tony memory list": kiosk(env, "memory", "list", "--user", "Tony", "--json"),
    }
    doctor = kiosk(env, "doctor", *DOCTOR_DATABASE_ONLY, "--json")
    checks = json.loads(doctor.stdout or "{}").get("checks", [])
    reported = [c for c in checks if c["name"] == "sealed rows" and c["status"] == "fail"]
    fixes = [c["fix"] for c in reported]
    steps["Colin memory delete"] = kiosk(env, "memory", "delete", str(colin_note["id"]), "--json")
    failing = {what: _line(step) for what, step in steps.items() if step.returncode != 0}
    asked = json.loads(steps["Colin ask"].stdout) if steps["Colin ask"].returncode == 0 else {}
    colin_verified = (asked.get("identity") or {}).get("name") == "Colin"
    named = any(f"memory delete {colin_note['id']}" in fix for fix in fixes) and any(
        "revoke 'Tony'" in f for f in fixes
    )
    return AttackResult(
        attack="flip one byte of Tony's sealed template and of Colin's sealed note; ask, list, delete, doctor",
        expected="others' ask/list work, the owner lists and deletes the note, doctor names both rows with fixes",
        observed=(
            f"failing: {failing or 'none'}; Colin verified: {colin_verified}; doctor: {len(reported)} damaged "
            f"row(s), fixes: {'; '.join(fixes) or 'none'}"
        ),
        broken=bool(failing) or not named or not colin_verified,
    )


def _unsafe_keys(env: dict[str, str]) -> list[AttackResult]:
    from kiosk.config import load_config

    config = load_config(path=None, environ=env)
    key_file = config.security.key_path(config.paths.data_dir)
    results = []
    for target, mode, what in ((key_file, 0o666, "key file"), (key_file.parent, 0o777, "key directory")):
        before = stat.S_IMODE(target.stat().st_mode)
        target.chmod(mode)
        try:
            step = kiosk(env, "users", "list", "--json")
        finally:
            target.chmod(before)
        results.append(
            AttackResult(
                attack=f"make the {what} world-writable (chmod {mode:o}), then `kiosk users list`",
                expected="refused: one line naming the fix, exit 2",
                observed=_line(step),
                broken=step.returncode != 2 or "chmod" not in step.stderr,
            )
        )
    aside = key_file.with_name("master.key.aside")
    shutil.move(key_file, aside)
    try:
        step = kiosk(env, "users", "list", "--json")
        recreated = key_file.exists()
    finally:
        key_file.unlink(missing_ok=True)
        shutil.move(aside, key_file)
    results.append(
        AttackResult(
            attack="delete the master key file of a sealed database, then `kiosk users list`",
            expected="an error that names the fix (restore the key); no new key is made",
            observed=_line(step) + ("; a NEW key file was created" if recreated else "; no key file was created"),
            broken=step.returncode != 2 or recreated or "restore" not in step.stderr,
        )
    )
    return results


def run(workdir: Path) -> list[AttackResult]:
    home = workdir / "at-rest-home"
    env = environment(home)
    probes = _enrol(env, workdir)
    _remember(env, "Tony", "My bike is red.")
    dog = _remember(env, "Colin", "My dog is called Marmaduke.")
    secret = _remember(env, "Colin", SECRET)
    results = [_file_modes(env, home), _sensitive_stems(env, secret)]
    results.append(_sealed_row_faults(env, probes, dog))
    results.extend(_unsafe_keys(env))
    return results


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for result in run(Path(folder)):
            print(("BROKEN " if result.broken else "ok     ") + f"{result.attack}\n       {result.observed}")
