from pathlib import Path

import pytest

from kiosk.config import KioskConfig, load_config
from kiosk.errors import ConfigError


def test_defaults_load_without_a_file(tmp_path: Path) -> None:
    cfg = load_config(environ={"KIOSK_HOME": str(tmp_path)})
    assert cfg.paths.data_dir == tmp_path
    assert cfg.paths.db == tmp_path / "memory.db"
    assert cfg.retrieval.k == 10


def test_toml_file_and_env_override(tmp_path: Path) -> None:
    file = tmp_path / "kiosk.toml"
    file.write_text('[retrieval]\nk = 7\n[llm]\nmodel = "smollm2-135m-instruct"\n')
    cfg = load_config(file, environ={"KIOSK_RETRIEVAL__K": "12"})
    assert cfg.retrieval.k == 12
    assert cfg.llm.model == "smollm2-135m-instruct"


def test_unknown_key_names_the_setting(tmp_path: Path) -> None:
    file = tmp_path / "kiosk.toml"
    file.write_text("[retrieval]\nkk = 7\n")
    with pytest.raises(ConfigError, match=r"unknown setting 'retrieval.kk'"):
        load_config(file, environ={})


def test_a_setting_of_an_earlier_version_says_where_it_went(tmp_path: Path) -> None:
    file = tmp_path / "kiosk.toml"
    file.write_text("[llm]\nendpoint_url = 'http://127.0.0.1:8080/v1'\n")
    with pytest.raises(ConfigError, match=r"unknown setting 'llm.endpoint_url'; it is now 'llm.openai.endpoint_url'"):
        load_config(file, environ={})
    file.write_text("[retrieval]\ntheta_high = 0.5\n")
    with pytest.raises(ConfigError, match=r"'retrieval.theta_high'; it is no longer a setting"):
        load_config(file, environ={})
    file.write_text("[scopes]\nalpha = 1.0\n")
    with pytest.raises(ConfigError, match=r"'scopes'; it is no longer a setting"):
        load_config(file, environ={})


def test_bad_value_and_bad_syntax_are_one_line(tmp_path: Path) -> None:
    file = tmp_path / "kiosk.toml"
    file.write_text("[retrieval]\nk = 0\n")
    with pytest.raises(ConfigError, match=r"retrieval.k"):
        load_config(file, environ={})
    file.write_text("[retrieval\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(file, environ={})


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml", environ={})


def test_every_field_is_documented() -> None:
    for section in KioskConfig.model_fields.values():
        assert section.description
        for name, field in section.annotation.model_fields.items():  # type: ignore[union-attr]
            assert field.description, f"{name} has no description"
