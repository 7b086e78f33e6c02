"""One module per screen of the app."""
