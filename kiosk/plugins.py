"""Swappable parts found by name: one small registry per kind (face detector, face embedder, palm encoder,
LLM backend, memory store), in the manner of Frigate's detector plugins and mem0's provider factory.

A plugin registers a factory under the name the configuration uses, with the pydantic model of its own settings
(empty when it has none). Looking up an unknown name is a ConfigError that lists the known ones, so a typo in
kiosk.toml is one clear line, never an if-ladder falling through to a default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from kiosk.errors import ConfigError

Product = TypeVar("Product")
FactoryT = TypeVar("FactoryT", bound=Callable[..., Any])


class NoSettings(BaseModel):
    """The settings model of a plugin that has none of its own."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Plugin(Generic[Product]):
    """One registered implementation: its configuration name, factory and settings model."""

    name: str
    factory: Callable[..., Product]
    settings: type[BaseModel]
    summary: str


class Registry(Generic[Product]):
    """Name -> plugin for one kind of swappable part."""

    def __init__(self, kind: str, setting: str) -> None:
        self.kind = kind
        self.setting = setting
        self._plugins: dict[str, Plugin[Product]] = {}

    def register(
        self, name: str, *, settings: type[BaseModel] = NoSettings, summary: str = ""
    ) -> Callable[[FactoryT], FactoryT]:
        """Decorator: register `factory` under `name` (a second registration of a name is a programming error)."""

        def add(factory: FactoryT) -> FactoryT:
            if name in self._plugins:
                raise ValueError(f"{self.kind} plugin {name!r} is registered twice")
            self._plugins[name] = Plugin(name, factory, settings, summary)
            return factory

        return add

    def names(self) -> list[str]:
        return sorted(self._plugins)

    def get(self, name: str) -> Plugin[Product]:
        plugin = self._plugins.get(name)
        if plugin is None:
            known = ", ".join(self.names()) or "none"
            raise ConfigError(f"unknown {self.kind} {name!r} in setting {self.setting}", f"use one of: {known}")
        return plugin

    def create(self, name: str, *args: Any, **kwargs: Any) -> Product:
        """Build the plugin registered as `name`, passing the arguments through to its factory."""
        return self.get(name).factory(*args, **kwargs)
