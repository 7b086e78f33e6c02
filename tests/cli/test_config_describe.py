"""`kiosk config describe`: docs/configuration.md is its --markdown output, and the settings stay few."""

import json
import re
from pathlib import Path

import typer
from typer.testing import CliRunner

from kiosk.cli import config_cmd
from kiosk.cli.config_cmd import markdown, setting_rows

CONFIGURATION_MD = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
MAX_SETTINGS = 70


def describe(*options: str) -> str:
    app = typer.Typer()
    config_cmd.register(app)
    result = CliRunner().invoke(app, ["config", "describe", *options])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_committed_configuration_doc_is_the_generated_one() -> None:
    assert CONFIGURATION_MD.read_text(encoding="utf-8") == describe("--markdown"), (
        "docs/configuration.md is stale: regenerate it with `kiosk config describe --markdown > docs/configuration.md`"
    )


def test_nested_plugin_settings_are_listed_with_their_full_key() -> None:
    keys = [row["key"] for row in json.loads(describe("--json"))]
    assert "llm.openai.endpoint_url" in keys
    assert "llm.openai" not in keys
    assert len(keys) == len(set(keys))


def test_markdown_has_one_row_per_setting_and_escapes_pipes() -> None:
    rows = setting_rows()
    text = markdown(rows)
    table_rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(table_rows) == len(rows)
    assert all(len(re.split(r"(?<!\\)\|", line)) == 5 for line in table_rows)  # 3 cells, unescaped pipes only


def test_machine_specific_defaults_are_shown_portably() -> None:
    text = describe("--markdown")
    assert str(Path.home()) not in text
    assert "<user data dir>" in text


def test_describe_lists_at_most_70_settings() -> None:
    assert len(json.loads(describe("--json"))) <= MAX_SETTINGS
