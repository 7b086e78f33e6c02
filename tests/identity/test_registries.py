"""The biometric plugins are found by the name their setting holds: face detector, face embedder, palm encoder."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from kiosk.config import FaceConfig, KioskConfig, PalmConfig
from kiosk.errors import ConfigError
from kiosk.identity.detect import FACE_DETECTORS, create_detector
from kiosk.identity.embedders import FACE_EMBEDDERS, load_crop_embedder
from kiosk.identity.palm import load_palm_embedder
from kiosk.identity.palm_encoders import PALM_ENCODERS
from kiosk.plugins import NoSettings, Registry

# registry, its config section, the setting's field, and the plugins that carry settings (plugin -> section field)
REGISTRIES: list[tuple[Registry[Any], type[BaseModel], str, dict[str, str]]] = [
    (FACE_DETECTORS, FaceConfig, "detector", {}),
    (FACE_EMBEDDERS, FaceConfig, "embedder", {"arcface-onnx": "arcface"}),
    (PALM_ENCODERS, PalmConfig, "encoder", {"onnx": "onnx"}),
]


@pytest.mark.parametrize(("registry", "section", "setting", "with_settings"), REGISTRIES)
def test_every_choice_of_the_setting_is_a_registered_plugin(
    registry: Registry[Any], section: type[BaseModel], setting: str, with_settings: dict[str, str]
) -> None:
    choices = get_args(section.model_fields[setting].annotation)
    assert sorted(choices) == registry.names()
    assert section.model_fields[setting].default in registry.names()


@pytest.mark.parametrize(("registry", "section", "setting", "with_settings"), REGISTRIES)
def test_a_plugin_carries_the_settings_model_of_its_section_field(
    registry: Registry[Any], section: type[BaseModel], setting: str, with_settings: dict[str, str]
) -> None:
    for name in registry.names():
        plugin = registry.get(name)
        field = with_settings.get(name)
        if field is None:
            assert plugin.settings is NoSettings, name
            continue
        assert section.model_fields[field].annotation is plugin.settings
        assert plugin.settings.model_config.get("extra") == "forbid"
        assert all(info.description for info in plugin.settings.model_fields.values()), name


def with_setting(config: KioskConfig, section: str, field: str, value: str) -> KioskConfig:
    """`config` with a value the setting's own validation would refuse, as a plugin added without its name."""
    changed = config.model_copy(deep=True)
    object.__setattr__(getattr(changed, section), field, value)
    return changed


@pytest.mark.parametrize(
    ("section", "field", "build", "known"),
    [
        ("face", "detector", create_detector, "mediapipe, mtcnn"),
        ("face", "embedder", load_crop_embedder, "arcface-onnx, facenet, facenet+sface, sface"),
        ("palm", "encoder", load_palm_embedder, "compcode, onnx"),
    ],
)
def test_an_unknown_name_is_a_config_error_listing_the_known_ones(
    config: KioskConfig, section: str, field: str, build: Any, known: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        build(with_setting(config, section, field, "yolo"))
    assert f"{section}.{field}" in caught.value.message and "'yolo'" in caught.value.message
    assert known in caught.value.hint


def test_the_plugin_settings_load_from_toml_and_reject_unknown_keys(tmp_path: Path) -> None:
    from kiosk.config import load_config

    toml = tmp_path / "kiosk.toml"
    toml.write_text('[face]\nembedder = "arcface-onnx"\n[face.arcface]\nmodel_path = "/m/arc.onnx"\n')
    assert load_config(toml, environ={}).face.arcface.model_path == Path("/m/arc.onnx")
    toml.write_text('[palm.onnx]\nmodel_pth = "/m/palm.onnx"\n')
    with pytest.raises(ConfigError, match=r"palm\.onnx\.model_pth"):
        load_config(toml, environ={})
