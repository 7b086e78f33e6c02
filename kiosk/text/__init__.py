"""Sentence embeddings for notes and queries."""

from kiosk.text.encoder import TextEncoder, load_text_encoder

__all__ = ["TextEncoder", "load_text_encoder"]
