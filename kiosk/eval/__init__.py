"""Paper-style evaluation: LoCoMo in one shared store, Owner vs Non-owner, face and palm."""
