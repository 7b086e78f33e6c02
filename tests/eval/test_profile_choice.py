"""Which answer profile a LoCoMo run uses: --profile, else the configured one, without --steps-off."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiosk.config import KioskConfig
from kiosk.errors import ConfigError, DataError
from kiosk.eval.protocol import EvalOptions, chosen_profile, run_locomo
from kiosk.llm.profiles import PROFILES


def test_the_configured_profile_is_used_unless_the_run_names_one() -> None:
    config = KioskConfig()
    config.llm.answer_profile = "careful"
    assert chosen_profile(config, EvalOptions(modality="palm")) is PROFILES["careful"]
    named = chosen_profile(config, EvalOptions(modality="palm", profile="checked", steps_off=("unknown-unsupported",)))
    assert named.name == "checked without unknown-unsupported"
    assert named.has("unknown-contradicted") and not named.has("unknown-unsupported")


def test_a_step_the_profile_lacks_is_refused_before_any_work(tmp_path: Path) -> None:
    config = KioskConfig()
    config.paths.eval_data_dir = tmp_path / "no-data-here"
    with pytest.raises(DataError, match="no step complete-lists"):
        run_locomo(config, EvalOptions(modality="palm", steps_off=("complete-lists",), write=False))
    with pytest.raises(ConfigError, match="unknown answer profile"):
        run_locomo(config, EvalOptions(modality="palm", profile="tiny", write=False))
