"""Issue #34 point 8: bad input gets one clear line and exit 2 (never a traceback), stored text cannot drive the
terminal, an image over the pixel cap is refused before decoding, `ask --palm --roi` exists, and a config error
from the environment names its variable."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from datetime import UTC, datetime
from pathlib import Path

import cv2
import numpy as np
import pytest

from bench.attacks.bad_input import big_png
from kiosk.config import load_config
from kiosk.errors import ConfigError
from kiosk.memory import EMBEDDING_DIM, Note
from kiosk.memory.open import open_store

TERMINAL_CONTROLS = "\x1b[2J\x1b]0;pwned\x07 \rFAKE LINE \x9b31m \u202eevil"


def run_kiosk(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "KIOSK_HOME": str(home), **(env or {})}
    full_env.pop("KIOSK_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "kiosk", *args], capture_output=True, text=True, env=full_env, timeout=120, check=False
    )


def assert_one_line_exit_2(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().startswith("error: ") and result.stderr.strip().count("\n") == 0, result.stderr
    assert message in result.stderr


def png_header_only(path: Path, width: int, height: int) -> Path:
    """A PNG whose header declares width x height, with no pixel data after it."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk)
    return path


# ---- tracebacks ---------------------------------------------------------------------------------------------


def test_config_that_is_a_directory(tmp_path: Path) -> None:
    result = run_kiosk(tmp_path / "home", "--config", str(tmp_path), "memory", "users")
    assert_one_line_exit_2(result, "is a directory")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("memory", "delete", "99999999999999999999999"), "note id 99999999999999999999999 is out of range"),
        (("memory", "restore", "99999999999999999999999"), "note id 99999999999999999999999 is out of range"),
        (("memory", "list", "--scope", "public", "--offset", "99999999999999999999999"), "--offset"),
        (("memory", "list", "--scope", "public", "--limit", "99999999999999999999999"), "--limit"),
    ],
)
def test_ids_beyond_64_bits(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    assert_one_line_exit_2(run_kiosk(tmp_path / "home", *args), message)


def test_string_array_npy_probe(tmp_path: Path) -> None:
    probe = tmp_path / "probe.npy"
    np.save(probe, np.array(["a", "b", "c"]))
    result = run_kiosk(tmp_path / "home", "ask", "hello?", "--probe-npy", str(probe), "--no-llm")
    assert_one_line_exit_2(result, "not numbers")


def test_deeply_nested_import_json(tmp_path: Path) -> None:
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    result = run_kiosk(tmp_path / "home", "memory", "import", str(nested), "--user", "Ann", "--construct", "fast")
    assert_one_line_exit_2(result, "nested too deeply")


# ---- terminal control sequences in stored text ----------------------------------------------------------------


def test_memory_list_escapes_terminal_controls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("KIOSK_HOME", str(home))
    monkeypatch.delenv("KIOSK_CONFIG", raising=False)
    vector = np.random.default_rng(0).standard_normal(EMBEDDING_DIM).astype(np.float32)
    with open_store(load_config()) as store:
        owner = store.add_user("Eve")
        store.add_note(
            Note(None, owner.id, "face", TERMINAL_CONTROLS, datetime(2024, 1, 1, tzinfo=UTC), embedding=vector)
        )

    listed = run_kiosk(home, "memory", "list", "--user", "Eve")
    assert listed.returncode == 0, listed.stderr
    for control in ("\x1b", "\x07", "\r", "\x9b", "\u202e"):
        assert control not in listed.stdout
    assert "\\x1b[2J\\x1b]0;pwned\\x07 \\rFAKE LINE \\x9b31m \\u202eevil" in listed.stdout
    assert listed.stdout.count("\n") == 2  # the title and one row: a note cannot add rows

    as_json = run_kiosk(home, "memory", "list", "--user", "Eve", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert not any(control in as_json.stdout for control in ("\x1b", "\x07", "\r", "\x9b", "\u202e"))
    assert json.loads(as_json.stdout)["notes"][0]["content"] == TERMINAL_CONTROLS


def test_printable_keeps_ordinary_text() -> None:
    from kiosk.cli.common import printable

    assert printable("Grandma's café, 3 p.m.\tnext to the 🐕") == "Grandma's café, 3 p.m.\tnext to the 🐕"
    assert printable("two\nlines") == "two\\nlines"
    assert printable("two\nlines", keep_newlines=True) == "two\nlines"


# ---- the pixel cap --------------------------------------------------------------------------------------------


def test_every_image_reader_refuses_an_image_over_the_cap(tmp_path: Path) -> None:
    from kiosk.calibration.embed import load_image
    from kiosk.identity.face import read_image as face_read_image
    from kiosk.identity.gallery import samples_from_paths
    from kiosk.identity.image_files import ImageTooLarge, read_image_file
    from kiosk.identity.sources import read_image as source_read_image

    big = png_header_only(tmp_path / "big.png", 20_000, 20_000)
    with pytest.raises(ImageTooLarge, match="20000x20000"):
        read_image_file(big)
    with pytest.raises(ImageTooLarge, match="megapixel limit"):
        face_read_image(big)
    with pytest.raises(ImageTooLarge):
        face_read_image(big.read_bytes())
    assert source_read_image(big) is None
    (sample,) = samples_from_paths([big])
    assert sample.image is None and "megapixel limit" in str(sample.problem)
    with pytest.raises(ValueError, match="megapixel limit"):
        load_image(big)


@pytest.mark.parametrize("suffix", [".png", ".jpg", ".bmp", ".webp", ".tif", ".ppm", ".pgm", ".pfm"])
def test_image_headers_are_read_for_every_accepted_format(suffix: str) -> None:
    from kiosk.identity.image_files import declared_size, decode_image

    pixels = np.random.default_rng(1).integers(0, 255, (37, 53, 3), dtype=np.uint8)
    image: np.ndarray = pixels[:, :, 0] if suffix == ".pgm" else pixels
    if suffix == ".pfm":
        image = pixels.astype(np.float32) / 255
    ok, encoded = cv2.imencode(suffix, image)
    assert ok
    assert declared_size(encoded.tobytes()) == (53, 37)
    decoded = decode_image(encoded.tobytes(), "test")
    assert decoded is not None and decoded.shape[:2] == (37, 53)


def test_jpeg_size_found_after_large_metadata() -> None:
    from kiosk.identity.image_files import declared_size

    ok, encoded = cv2.imencode(".jpg", np.zeros((40, 60, 3), np.uint8))
    assert ok
    app_segment = b"\xff\xe2" + struct.pack(">H", 65535) + b"\x00" * 65533  # an ICC profile chunk
    data = encoded.tobytes()
    assert declared_size(data[:2] + app_segment * 3 + data[2:]) == (60, 40)


def test_unrecognised_image_format_is_never_decoded() -> None:
    from kiosk.identity.image_files import decode_image

    assert decode_image(b"not an image at all", "junk") is None


def test_cli_refuses_a_real_20000_pixel_png_before_decoding(tmp_path: Path) -> None:
    big = big_png(tmp_path / "big.png", 20_000)
    assert big.stat().st_size < 1_000_000
    measure = (
        "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(r.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "sys.stdout.write(r.stderr)"
    )
    env = {**os.environ, "KIOSK_HOME": str(tmp_path / "home")}
    env.pop("KIOSK_CONFIG", None)
    command = [sys.executable, "-c", measure, sys.executable, "-m", "kiosk", "ask", "hi", "--face", str(big)]
    out = subprocess.run([*command, "--no-llm"], capture_output=True, text=True, env=env, timeout=120, check=True)
    code, peak_kb, stderr = out.stdout.split("\n", 2)
    assert code == "2" and "Traceback" not in stderr and stderr.strip().count("\n") == 0, stderr
    assert "over the" in stderr and "megapixel limit" in stderr
    assert int(peak_kb) < 400_000  # decoding it took 2.1 GB; refused from its header it stays at import size


# ---- ask --palm --roi -----------------------------------------------------------------------------------------


def test_ask_has_the_roi_flag_its_palm_error_suggests(tmp_path: Path) -> None:
    result = run_kiosk(tmp_path / "home", "ask", "hi", "--palm", str(tmp_path / "absent.png"), "--roi", "--no-llm")
    assert_one_line_exit_2(result, "does not exist")
    lone = run_kiosk(tmp_path / "home", "ask", "hi", "--roi", "--no-llm")
    assert_one_line_exit_2(lone, "--roi describes the --palm image")


@pytest.mark.real_models
def test_ask_palm_roi_embeds_a_palm_roi_without_hand_detection(tmp_path: Path) -> None:
    config = load_config()
    rois = sorted((config.paths.eval_data_dir / "palm_tongji_palmnet" / "images").glob("*.bmp"))[:1]
    if not rois:
        pytest.skip("Tongji palm ROIs are not available")
    models = {"KIOSK_PATHS__MODELS_DIR": str(config.paths.models)}
    without = run_kiosk(tmp_path / "home", "ask", "hi", "--palm", str(rois[0]), "--no-llm", "--json", env=models)
    assert without.returncode == 2 and "--roi" in without.stderr
    result = run_kiosk(
        tmp_path / "home", "ask", "hi", "--palm", str(rois[0]), "--roi", "--no-llm", "--json", env=models
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["gate"]["modality"] == "palm"


# ---- config errors from the environment -----------------------------------------------------------------------


def test_env_config_error_names_the_variable(tmp_path: Path) -> None:
    config_file = tmp_path / "kiosk.toml"
    config_file.write_text("[llm]\nthreads = 2\n")
    with pytest.raises(ConfigError) as bad_value:
        load_config(config_file, environ={"KIOSK_LLM__THREADS": "abc"})
    assert "environment variable KIOSK_LLM__THREADS" in bad_value.value.message
    assert str(config_file) not in bad_value.value.message
    with pytest.raises(ConfigError) as unknown:
        load_config(None, environ={"KIOSK_LLM__MODLE": "x"})
    assert "environment variable KIOSK_LLM__MODLE" in unknown.value.message
    assert "kiosk.toml" not in unknown.value.message


def test_file_config_error_still_names_the_file(tmp_path: Path) -> None:
    config_file = tmp_path / "kiosk.toml"
    config_file.write_text("[llm]\nthreads = 'abc'\n")
    with pytest.raises(ConfigError) as error:
        load_config(config_file, environ={"KIOSK_LLM__MAX_ANSWER_TOKENS": "50"})
    assert error.value.message.startswith(f"{config_file}: setting 'llm.threads'")


def test_env_config_error_on_the_cli(tmp_path: Path) -> None:
    result = run_kiosk(tmp_path / "home", "memory", "users", env={"KIOSK_LLM__THREADS": "abc"})
    assert_one_line_exit_2(result, "environment variable KIOSK_LLM__THREADS: setting 'llm.threads'")
