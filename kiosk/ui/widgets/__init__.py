"""Reusable touch-friendly widgets."""
