"""Bio-Memory Kiosk: biometric-gated long-term memory for a shared-terminal assistant."""

__version__ = "0.1.0"
