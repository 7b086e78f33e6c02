"""One calm visual language: a dark slate surface, one teal accent, large type in kiosk mode."""

from __future__ import annotations

from dataclasses import dataclass

BACKGROUND = "#0f172a"
SURFACE = "#1e293b"
SURFACE_RAISED = "#273549"
BORDER = "#334155"
TEXT = "#e2e8f0"
TEXT_MUTED = "#94a3b8"
ACCENT = "#2dd4bf"
ACCENT_DARK = "#0f766e"
CALM = "#818cf8"  # "answered without personal memory": distinct, not alarming
WARN = "#fbbf24"
DANGER = "#f87171"
OK = "#34d399"


@dataclass(frozen=True)
class Metrics:
    font_px: int
    title_px: int
    touch_px: int  # smallest side of anything a finger presses
    radius_px: int


KIOSK = Metrics(font_px=22, title_px=34, touch_px=64, radius_px=18)
DESKTOP = Metrics(font_px=15, title_px=24, touch_px=38, radius_px=12)


def stylesheet(m: Metrics) -> str:
    return f"""
QWidget {{ background: {BACKGROUND}; color: {TEXT}; font-size: {m.font_px}px;
          font-family: "Inter", "Noto Sans", "DejaVu Sans", sans-serif; }}
QLabel {{ background: transparent; }}
QLabel[role="title"] {{ font-size: {m.title_px}px; font-weight: 600; }}
QLabel[role="muted"] {{ color: {TEXT_MUTED}; }}
QLabel[role="error"] {{ color: {DANGER}; }}
QFrame[role="card"] {{ background: {SURFACE}; border: 1px solid {BORDER}; border-radius: {m.radius_px}px; }}
QPushButton {{ background: {SURFACE_RAISED}; border: 1px solid {BORDER}; border-radius: {m.radius_px}px;
              padding: 8px 22px; min-height: {m.touch_px}px; min-width: {m.touch_px}px; }}
QPushButton:pressed {{ background: {BORDER}; }}
QPushButton:disabled {{ color: #64748b; background: {SURFACE}; }}
QPushButton[role="primary"] {{ background: {ACCENT_DARK}; border-color: {ACCENT}; color: white; font-weight: 600; }}
QPushButton[role="primary"]:pressed {{ background: {ACCENT}; color: {BACKGROUND}; }}
QPushButton[role="danger"] {{ background: #7f1d1d; border-color: {DANGER}; color: white; }}
QPushButton[role="link"] {{ background: transparent; border: none; color: {ACCENT}; padding: 4px 0;
                           min-height: {m.touch_px * 2 // 3}px; text-align: left; }}
QPushButton[role="key"] {{ padding: 0; font-size: {m.font_px + 2}px; border-radius: {m.radius_px // 2}px; }}
QLineEdit, QComboBox {{ background: {SURFACE}; border: 2px solid {BORDER}; border-radius: {m.radius_px}px;
                        padding: 8px 16px; min-height: {m.touch_px - 8}px; selection-background-color: {ACCENT_DARK}; }}
QLineEdit:focus {{ border-color: {ACCENT}; }}
QComboBox QAbstractItemView {{ background: {SURFACE}; selection-background-color: {ACCENT_DARK}; }}
QProgressBar {{ background: {SURFACE}; border: none; border-radius: 8px; height: 16px; text-align: center;
               color: transparent; }}
QProgressBar::chunk {{ background: {ACCENT}; border-radius: 8px; }}
QScrollArea {{ border: none; }}
QScrollBar:vertical {{ background: transparent; width: 10px; }}
QScrollBar::handle:vertical {{ background: {BORDER}; border-radius: 5px; min-height: 40px; }}
QScrollBar::add-line, QScrollBar::sub-line {{ height: 0; }}
QTabBar::tab {{ background: transparent; color: {TEXT_MUTED}; padding: 12px 26px; min-height: {m.touch_px - 16}px;
               border-bottom: 3px solid transparent; }}
QTabBar::tab:selected {{ color: {TEXT}; border-bottom-color: {ACCENT}; }}
QTabWidget::pane {{ border: none; }}
QListWidget {{ background: {SURFACE}; border: 1px solid {BORDER}; border-radius: {m.radius_px}px; padding: 6px; }}
QListWidget::item {{ padding: 12px; border-bottom: 1px solid {BORDER}; }}
QListWidget::item:selected {{ background: {SURFACE_RAISED}; color: {TEXT}; }}
QRadioButton {{ background: transparent; spacing: 14px; min-height: {m.touch_px * 2 // 3}px; }}
QRadioButton::indicator {{ width: {m.font_px}px; height: {m.font_px}px; border-radius: {m.font_px // 2 + 1}px;
                          border: 2px solid {TEXT_MUTED}; background: {SURFACE}; }}
QRadioButton::indicator:checked {{ border: 2px solid {ACCENT}; background: qradialgradient(cx:0.5, cy:0.5,
    radius:0.5, fx:0.5, fy:0.5, stop:0 {ACCENT}, stop:0.55 {ACCENT}, stop:0.6 {SURFACE}, stop:1 {SURFACE}); }}
QRadioButton:checked {{ color: {ACCENT}; font-weight: 600; }}
QRadioButton:disabled {{ color: #64748b; }}
"""
