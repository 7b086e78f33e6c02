"""Screenshots of the app's main states on the real pipeline, for the README.

QT_QPA_PLATFORM=offscreen .venv/bin/python -m bench.screenshots [--out bench/results/screenshots]

Real core end to end (see bench/bench_ui.py): the face video as the camera, FaceNet, SQLite + sqlite-vec,
MiniLM retrieval and the real small GGUF (smollm2-135m-instruct) answering. The performer of the video is
enrolled from its good frames (as the wizard does) with two notes; a second person from a reference photo.
States: kiosk main with a personal answer (memories expanded), the memory screen, enrollment capture, admin
calibration on a small LFW subset, the idle screen, and, with only the second person enrolled, the calm
"answered without personal memory" fallback. The performer often turns away from the camera; when the check
at send time finds no clear face, the answer is (correctly) without memory, and the script asks again.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from bench.bench_ui import OWNER_NOTES, Kiosk, kiosk_config, open_kiosk, seed, wait_for_owner
from kiosk.calibration.data import link_labelled_subset

OUT = Path(__file__).resolve().parent / "results" / "screenshots"
SIZE = (1920, 1080)


def grab(kiosk: Kiosk, out: Path, name: str) -> Path:
    for _ in range(5):
        kiosk.app.processEvents()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.png"
    if not kiosk.window.grab().save(str(path)):
        raise RuntimeError(f"could not save {path}")
    print("wrote", path, flush=True)
    return path


def answer(kiosk: Kiosk, question: str) -> Any:
    """Type and send `question`; the AnswerView (or the error text) once the answer is complete."""
    results: list[Any] = []
    main = kiosk.window.main
    main.answer_done.connect(results.append)
    main.type_with_keyboard(question)
    main.send()
    if not kiosk.pump(lambda: bool(results), 240):
        raise RuntimeError("no answer in time")
    main.answer_done.disconnect(results.append)
    return results[0]


def forget_question(kiosk: Kiosk, question: str) -> None:
    kiosk.pump(lambda: False, 1.0)  # let the background "remember" finish
    store = kiosk.window.ctx.require_services().store
    for user in store.list_users():
        for note in store.list_notes(int(user.id or 0)):
            if note.content == question and note.id is not None:
                store.delete_note(note.id)


def face_in_box(kiosk: Kiosk, name: str) -> bool:
    view = kiosk.window.main.preview._view
    return name in kiosk.window.main.badge.text() and view is not None and any(f.primary for f in view.faces)


def lfw_subset(data_dir: Path, folder: Path, identities: int = 40, per_identity: int = 3) -> Path:
    return link_labelled_subset(data_dir / "lfw3d_frontalized", folder, identities, per_identity)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--llm", default="smollm2-135m-instruct")
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from kiosk.identity.face import load_face_embedder
    from kiosk.llm.factory import create_llm
    from kiosk.text import load_text_encoder
    from kiosk.ui.screens import main as main_screen

    with tempfile.TemporaryDirectory(prefix="ui-shots-") as tmp:
        config = kiosk_config(Path(tmp) / "owner", args.llm)
        # PIN only for the calibration picture: the admin liveness check wants a blink or head turn the looped
        # video shows only at some moments (tests/ui/test_admin_access.py shows the check itself).
        config.security.admin_challenge = "off"
        face = load_face_embedder(config)
        text_encoder = load_text_encoder(config)
        llm = create_llm(config)
        seed(
            config,
            face,
            text_encoder,
            {"Lin": "short_hamilton_clip.mp4", "Alex": "alex-lacamoire.png"},
            {"Lin": OWNER_NOTES},
        )
        kiosk = open_kiosk(config, face, text_encoder, llm, SIZE)
        try:
            window = kiosk.window
            window.show_screen("enroll")
            window.enroll.agree_button.click()
            kiosk.pump(lambda: len(window.enroll.samples) >= 2, 60)
            grab(kiosk, args.out, "enrollment")
            window.show_screen("main")

            window.ctx.admin_pin.set_pin("2580")
            window.show_screen("admin")
            window.admin.gate.pad.type_pin("2580")
            window.admin.calibration_tab.folder.setText(str(lfw_subset(config.paths.eval_data_dir, Path(tmp) / "lfw")))
            window.admin.calibration_tab.run_calibration()
            kiosk.pump(lambda: window.admin.calibration_tab.result is not None, 300)
            grab(kiosk, args.out, "admin-calibration")
            window.show_screen("main")

            window.show_screen("memory")
            kiosk.pump(lambda: bool(window.memory.notes), 30)
            grab(kiosk, args.out, "memory")
            window.show_screen("main")

            # The performer turns away and the video cuts to the audience: the check at send time then
            # (correctly) answers without memory; ask until the answer is personal. For the picture only, the
            # conversation is then held (no clearing for the audience cutaways) until he faces the camera again.
            for _attempt in range(8):
                wait_for_owner(kiosk, "Lin")
                result = answer(kiosk, "Where does my sister live?")
                if getattr(result, "notes", None) and window.main.conversation.bubbles:
                    break
                window.main.clear_conversation()
                forget_question(kiosk, "Where does my sister live?")  # retries must not pile up as notes
            main_screen.FRAMES_TO_SWITCH_PERSON = 10**9
            kiosk.pump(lambda: face_in_box(kiosk, "Lin"), 60)
            bubble = window.main.conversation.answers()[-1]
            if bubble.memory_toggle.isVisible():
                bubble.memory_toggle.click()
            grab(kiosk, args.out, "kiosk-main")

            window.analysis.stop()  # a face in view would wake the kiosk at once
            window.go_idle()
            grab(kiosk, args.out, "idle")
        finally:
            kiosk.close()

        stranger = kiosk_config(Path(tmp) / "stranger", args.llm)
        seed(stranger, face, text_encoder, {"Alex": "alex-lacamoire.png"}, {"Alex": OWNER_NOTES})
        kiosk = open_kiosk(stranger, face, text_encoder, llm, SIZE)
        try:
            wait_for_owner(kiosk, "Not recognised")
            answer(kiosk, "Where does my sister live?")
            kiosk.pump(lambda: bool(kiosk.window.main.preview._view and kiosk.window.main.preview._view.faces), 30)
            grab(kiosk, args.out, "kiosk-fallback")
        finally:
            kiosk.close()


if __name__ == "__main__":
    main()
