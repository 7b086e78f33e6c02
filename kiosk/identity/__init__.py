"""Biometric identity: face and palm capture, embedding, enrollment and verification."""
