"""The PySide6 kiosk app: renders state and calls the Qt-free core through `services.KioskServices`."""
