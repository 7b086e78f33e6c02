"""Live camera preview with face boxes, and the presence badge under it."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPainterPath, QPaintEvent, QPen
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QWidget

from kiosk.app.views import FrameView, Presence
from kiosk.ui import theme


def to_qimage(rgb: np.ndarray) -> QImage:
    """A deep copy, so the numpy buffer may be freed or reused by the capture thread."""
    if rgb.ndim == 2:
        rgb = np.repeat(rgb[:, :, None], 3, axis=2)
    rgb = np.ascontiguousarray(rgb[:, :, :3], dtype=np.uint8)
    height, width, _ = rgb.shape
    return QImage(rgb.data, width, height, 3 * width, QImage.Format.Format_RGB888).copy()


class CameraPreview(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._image: QImage | None = None
        self._view: FrameView | None = None
        self._message: str | None = "Starting the camera…"
        self.setMinimumSize(320, 180)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def show_frame(self, view: FrameView) -> None:
        self._view = view
        if view.image is not None:
            self._image = to_qimage(view.image)
        if view.camera != "live":
            # Friendly words on screen; the source's technical detail goes to the tooltip (and the log).
            self._message = {
                "reconnecting": "No camera picture — reconnecting…",
                "lost": "No camera. Check that it is plugged in.",
                "ended": "The video has ended.",
                "starting": "Starting the camera…",
            }.get(view.camera, "Camera unavailable")
            self.setToolTip(view.camera_message or "")
        else:
            self._message = None
        self.update()

    def show_message(self, message: str) -> None:
        self._message = message
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        area = QRectF(self.rect())
        clip = QPainterPath()
        clip.addRoundedRect(area, 18, 18)
        painter.setClipPath(clip)
        painter.fillRect(area, QColor("#020617"))
        if self._image is not None:
            # Cover the whole area (crop the overflow): no letterbox bars on a kiosk screen.
            scale = max(area.width() / self._image.width(), area.height() / self._image.height())
            width, height = self._image.width() * scale, self._image.height() * scale
            # Centre the crop on the person being served when there is one, else on the frame.
            focus_x, focus_y = self._image.width() / 2, self._image.height() / 2
            primary = [f for f in self._view.faces if f.primary] if self._view is not None else []
            if primary:
                focus_x, focus_y = primary[0].x + primary[0].w / 2, primary[0].y + primary[0].h / 2
            left = min(area.left(), max(area.right() - width, area.center().x() - focus_x * scale))
            top = min(area.top(), max(area.bottom() - height, area.center().y() - focus_y * scale))
            target = QRectF(left, top, width, height)
            painter.drawImage(target, self._image)
            if self._message is not None:
                painter.fillRect(target, QColor(2, 6, 23, 170))
            elif self._view is not None:
                for face in self._view.faces:
                    color = QColor(theme.ACCENT if face.primary else theme.WARN)
                    painter.setPen(QPen(color, 4 if face.primary else 3))
                    painter.drawRoundedRect(
                        QRectF(
                            target.x() + face.x * scale,
                            target.y() + face.y * scale,
                            face.w * scale,
                            face.h * scale,
                        ),
                        10,
                        10,
                    )
        text = self._message or (self._view.hint if self._view is not None else None)
        if text:
            font = QFont(self.font())
            font.setPixelSize(max(16, min(30, int(area.height() / 28))))
            painter.setFont(font)
            metrics = painter.fontMetrics()
            box_height = metrics.height() + 20
            box_width = min(area.width() - 32, metrics.horizontalAdvance(text) + 48)
            box = QRectF(area.center().x() - box_width / 2, area.bottom() - box_height - 18, box_width, box_height)
            if self._message is not None:
                box.moveTop(area.center().y() - box_height / 2)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(15, 23, 42, 215))
            painter.drawRoundedRect(box, 14, 14)
            painter.setPen(QColor(theme.TEXT))
            painter.drawText(box, Qt.AlignmentFlag.AlignCenter, text)
        painter.end()


BADGE_STYLE = {
    "recognised": (theme.OK, "{name}", "match {score:.2f}"),
    "unknown": (theme.TEXT_MUTED, "Not recognised", "answers won't use personal memory"),
    "multiple": (theme.WARN, "Two people in view", "personal memory is hidden"),
    "unclear": (theme.TEXT_MUTED, "Face not clear yet", "look at the camera"),
    "nobody": (theme.TEXT_MUTED, "Nobody in view", "step in front of the camera"),
    "no-camera": (theme.DANGER, "No camera", "check the camera connection"),
}
# A terminal whose only biometric is a palm scanner (no camera) speaks of the palm, not the face.
PALM_ONLY_BADGE_STYLE = {
    **BADGE_STYLE,
    "unclear": (theme.TEXT_MUTED, "Palm not clear yet", "hold your open palm still"),
    "nobody": (theme.TEXT_MUTED, "No palm on the scanner", "hold your open palm over the scanner"),
    "no-camera": (theme.DANGER, "No palm scanner", "check the scanner connection"),
}


class IdentityBadge(QFrame):
    def __init__(self, parent: QWidget | None = None, styles: dict[str, tuple[str, str, str]] = BADGE_STYLE) -> None:
        super().__init__(parent)
        self.styles = styles
        self.setProperty("role", "card")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(20, 12, 20, 12)
        layout.setSpacing(14)
        self.dot = QLabel(self)
        self.dot.setFixedSize(18, 18)
        self.title = QLabel(self)
        self.title.setStyleSheet("font-weight: 600;")
        self.detail = QLabel(self)
        self.detail.setProperty("role", "muted")
        layout.addWidget(self.dot)
        layout.addWidget(self.title)
        layout.addStretch(1)
        layout.addWidget(self.detail)
        self.presence: Presence | None = None
        self.set_presence(Presence("nobody"))

    def set_presence(self, presence: Presence) -> None:
        if presence == self.presence:
            return
        self.presence = presence
        color, title, detail = self.styles[presence.state]
        self.dot.setStyleSheet(f"background: {color}; border-radius: 9px;")
        self.title.setText(title.format(name=presence.name or "Recognised"))
        self.detail.setText(detail.format(score=presence.score or 0.0))

    def text(self) -> str:
        return f"{self.title.text()} — {self.detail.text()}"
