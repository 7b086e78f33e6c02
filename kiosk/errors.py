"""Errors a person can act on: each carries what went wrong and what to do about it."""

from __future__ import annotations


class KioskError(Exception):
    """An expected failure with a one-line message and a hint; the CLI prints it without a traceback."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        return f"{self.message} — {self.hint}" if self.hint else self.message


class ConfigError(KioskError):
    """The configuration file or an environment override is invalid."""


class ModelError(KioskError):
    """A model is missing, corrupt, or fails its checksum."""


class DataError(KioskError):
    """Input data (images, conversations, data sets) is missing or malformed."""


class ProbeError(KioskError):
    """A biometric probe is unusable (wrong dimension, NaN, zero vector, no face...)."""


class CalibrationError(KioskError):
    """A calibration cannot be made or does not fit the active encoder."""


class StoreError(KioskError):
    """The memory store cannot be opened or written."""


class DuplicateNote(StoreError):
    """The owner already has a note from this source reference (an import ran twice, perhaps at once)."""

    def __init__(self, message: str, hint: str = "", *, note_id: int = 0) -> None:
        super().__init__(message, hint)
        self.note_id = note_id


class StoreUnavailable(StoreError):
    """The fleet memory database cannot be reached (a terminal's offline queue takes over for new notes)."""


class LLMError(KioskError):
    """The language model backend failed."""
