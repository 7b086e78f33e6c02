"""Genuine vs impostor score densities with the thresholds of each rule, painted directly (no plotting lib)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPainterPath, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from kiosk.ui import theme

BINS = 60


class ScoreHistogram(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.genuine: np.ndarray | None = None
        self.impostor: np.ndarray | None = None
        self.thresholds: dict[str, float] = {}
        self.chosen: str | None = None
        self.setMinimumSize(420, 240)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def set_scores(self, genuine: np.ndarray, impostor: np.ndarray, thresholds: dict[str, float]) -> None:
        self.genuine = np.asarray(genuine, dtype=np.float64)
        self.impostor = np.asarray(impostor, dtype=np.float64)
        self.thresholds = dict(thresholds)
        self.update()

    def choose(self, rule: str) -> None:
        self.chosen = rule
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        outer = QRectF(self.rect())
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(theme.SURFACE))
        painter.drawRoundedRect(outer, 16, 16)
        font = QFont(self.font())
        font.setPixelSize(max(14, min(18, self.height() // 30)))
        painter.setFont(font)
        plot = outer.adjusted(36, 56, -28, -48)
        if self.genuine is None or self.impostor is None or not len(self.genuine) or not len(self.impostor):
            painter.setPen(QColor(theme.TEXT_MUTED))
            painter.drawText(outer, Qt.AlignmentFlag.AlignCenter, "Run a calibration to see the score densities")
            painter.end()
            return
        both = np.concatenate([self.genuine, self.impostor])
        low, high = float(np.min(both)), float(np.max(both))
        low, high = min(low, *self.thresholds.values(), 0.0), max(high, *self.thresholds.values(), 1.0)
        edges = np.linspace(low, high, BINS + 1)
        densities = [np.histogram(s, bins=edges, density=True)[0] for s in (self.impostor, self.genuine)]
        peak = max(float(d.max()) for d in densities) or 1.0

        def x_of(value: float) -> float:
            return plot.left() + (value - low) / (high - low) * plot.width()

        def y_of(density: float) -> float:
            return plot.bottom() - density / peak * plot.height()

        painter.setPen(QPen(QColor(theme.BORDER), 1))
        painter.drawLine(plot.bottomLeft(), plot.bottomRight())
        for tick in np.linspace(low, high, 6):
            painter.setPen(QColor(theme.TEXT_MUTED))
            painter.drawText(QPointF(x_of(tick) - 14, plot.bottom() + 28), f"{tick:.1f}")
        colors = (QColor(theme.CALM), QColor(theme.ACCENT))
        for density, color in zip(densities, colors, strict=True):
            path = QPainterPath(QPointF(plot.left(), plot.bottom()))
            for i, value in enumerate(density):
                path.lineTo(x_of(edges[i]), y_of(value))
                path.lineTo(x_of(edges[i + 1]), y_of(value))
            path.lineTo(plot.right(), plot.bottom())
            fill = QColor(color)
            fill.setAlpha(90)
            painter.setPen(QPen(color, 2))
            painter.setBrush(fill)
            painter.drawPath(path)
        legend_x = plot.left()
        for color, name in zip(colors, ("impostor pairs", "genuine pairs"), strict=True):
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(color)
            painter.drawRoundedRect(QRectF(legend_x, 20, 16, 16), 4, 4)
            painter.setPen(QColor(theme.TEXT))
            painter.drawText(QPointF(legend_x + 24, 34), name)
            legend_x += painter.fontMetrics().horizontalAdvance(name) + 60
        for rule, tau in self.thresholds.items():
            chosen = rule == self.chosen
            pen = QPen(QColor(theme.TEXT if chosen else theme.TEXT_MUTED), 3 if chosen else 1)
            pen.setStyle(Qt.PenStyle.SolidLine if chosen else Qt.PenStyle.DashLine)
            painter.setPen(pen)
            painter.drawLine(QPointF(x_of(tau), plot.top()), QPointF(x_of(tau), plot.bottom()))
            if chosen:
                bold = QFont(font)
                bold.setBold(True)
                bold.setPixelSize(font.pixelSize() + 4)
                painter.setFont(bold)
                label = f"τ = {tau:.3f}"
                width = painter.fontMetrics().horizontalAdvance(label)
                left = x_of(tau) + 10 if x_of(tau) + 10 + width < plot.right() else x_of(tau) - 10 - width
                painter.drawText(QPointF(left, plot.top() + 22), label)
                painter.setFont(font)
        painter.end()
