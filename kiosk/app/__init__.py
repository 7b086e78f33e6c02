"""The application layer: builds the object graph from the settings (kiosk.app.build) and the services the
kiosk screens, the CLI and the evaluation call. Qt-free; imports the core, never kiosk.ui or kiosk.cli."""
