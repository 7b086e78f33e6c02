"""Protection of biometric and memory data: sealing at rest, erasure, audit, back-off."""
