"""The admin screen's calibration tab: run a calibration on a labelled folder, or have one proposed for this site
from the enrolled people's own frames and the shipped impostor cohort; see the score histograms and the operating
points, and apply the chosen tau (a destructive action: it may ask for the liveness check first)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from kiosk.app.views import CalibrationView
from kiosk.ui.context import AppContext
from kiosk.ui.screens.base import label
from kiosk.ui.screens.guard import Guard
from kiosk.ui.widgets.histogram import ScoreHistogram
from kiosk.ui.workers import submit

RULE_NAMES = {
    "tau_d": "Density intersection τ_D (paper)",
    "eer": "Equal error rate",
    "far": "Target false-accept rate",
    "strict": "Stricter of τ_D and target FAR",
    "fused": "Target FAR for the camera's fused frames (shared terminals)",
}


SITE_TARGETS = ("1e-3", "1e-4", "1e-2")


def _pct(value: float) -> str:
    return f"{value * 100:.2f} %" if value >= 1e-4 else f"{value * 100:.3f} %"


class CalibrationTab(QWidget):
    ready = Signal(object)  # a finished calibration run (CalibrationView)
    done = Signal(str)  # what just happened, for the screen's action_done

    def __init__(self, ctx: AppContext, guarded: Guard) -> None:
        super().__init__()
        self.ctx = ctx
        self._guarded = guarded
        self.result: CalibrationView | None = None
        self._build()

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setSpacing(14)
        row = QHBoxLayout()
        self.modality = QComboBox()
        self.modality.addItems(["face", "palm"])
        self.folder = QLineEdit()
        self.folder.setPlaceholderText("Folder of labelled images (manifest.csv or pairs.txt)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        browse.setVisible(self.ctx.desktop)
        self.run_button = QPushButton("Run calibration")
        self.run_button.setProperty("role", "primary")
        self.run_button.clicked.connect(self.run_calibration)
        # The site proposal shares the row: the operating points below need the screen's height.
        self.site_target = QComboBox()
        self.site_target.addItems(list(SITE_TARGETS))
        self.site_target.setToolTip("Target false-accept rate of the site proposal")
        self.site_button = QPushButton("Propose for this site")
        self.site_button.setToolTip("Propose τ from the enrolled people's own frames and the shipped impostor cohort")
        self.site_button.clicked.connect(self.run_site_calibration)
        row.addWidget(self.modality)
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        row.addWidget(self.run_button)
        row.addSpacing(12)
        row.addWidget(label("or at FAR", "muted", wrap=False))
        row.addWidget(self.site_target)
        row.addWidget(self.site_button)
        layout.addLayout(row)
        self.cal_progress = QProgressBar()
        self.cal_progress.setRange(0, 1000)
        self.cal_status = label("Pick a data folder and run a calibration.", "muted")
        layout.addWidget(self.cal_progress)
        layout.addWidget(self.cal_status)
        body = QHBoxLayout()
        self.histogram = ScoreHistogram()
        body.addWidget(self.histogram, 3)
        side_card = QFrame()
        side_card.setProperty("role", "card")
        side = QVBoxLayout(side_card)
        side.setContentsMargins(20, 18, 20, 18)
        side.addWidget(label("Operating point", "title"))
        self.rules = QButtonGroup(self)
        self.rules.setExclusive(True)
        self.rule_buttons: dict[str, QRadioButton] = {}
        self.rule_figures: dict[str, QLabel] = {}
        for rule, name in RULE_NAMES.items():
            button = QRadioButton(name)
            button.setEnabled(False)
            button.toggled.connect(lambda on, r=rule: self._rule_picked(r) if on else None)
            figures = label("", "muted")
            figures.setContentsMargins(self.ctx.metrics.font_px + 14, 0, 0, 8)
            self.rules.addButton(button)
            self.rule_buttons[rule] = button
            self.rule_figures[rule] = figures
            side.addWidget(button)
            side.addWidget(figures)
        side.addStretch(1)
        self.counts = label("", "muted")
        side.addWidget(self.counts)
        self.apply_button = QPushButton("Apply this threshold")
        self.apply_button.setProperty("role", "primary")
        self.apply_button.setEnabled(False)
        self.apply_button.clicked.connect(self.apply_calibration)
        side.addWidget(self.apply_button)
        body.addWidget(side_card, 2)
        layout.addLayout(body, 1)

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Calibration data folder")
        if folder:
            self.folder.setText(folder)

    def run_calibration(self) -> None:
        folder = Path(self.folder.text().strip())
        modality = self.modality.currentText()
        if not self.folder.text().strip() or not folder.is_dir():
            self.cal_status.setText(f"Not a folder: {folder}")
            return
        self.run_button.setEnabled(False)
        self.apply_button.setEnabled(False)
        self.cal_progress.setValue(0)
        self.cal_status.setText("Calibrating…")
        self.ctx.audit.record("calibration-run", modality=modality, folder=str(folder))
        services = self.ctx.require_services()
        submit(
            lambda progress: services.run_calibration(modality, folder, progress),
            self._calibrated,
            self._calibration_failed,
            self._calibration_progress,
            pool=self.ctx.pool,
        )

    def run_site_calibration(self) -> None:
        modality = self.modality.currentText()
        target = float(self.site_target.currentText())
        self.run_button.setEnabled(False)
        self.site_button.setEnabled(False)
        self.apply_button.setEnabled(False)
        self.cal_progress.setValue(0)
        self.cal_status.setText("Proposing a threshold for this site…")
        self.ctx.audit.record("site-calibration-run", modality=modality, target_far=target)
        services = self.ctx.require_services()
        submit(
            lambda progress: services.run_site_calibration(modality, target, progress),
            self._calibrated,
            self._calibration_failed,
            self._calibration_progress,
            pool=self.ctx.pool,
        )

    def _calibration_progress(self, fraction: float, message: str) -> None:
        self.cal_progress.setValue(int(max(0.0, min(1.0, fraction)) * 1000))
        self.cal_status.setText(message)

    def _calibrated(self, result: CalibrationView) -> None:
        self.result = result
        self.run_button.setEnabled(True)
        self.cal_progress.setValue(1000)
        self.histogram.set_scores(result.genuine, result.impostor, result.thresholds)
        for rule, button in self.rule_buttons.items():
            available = rule in result.thresholds
            button.setEnabled(available)
            text = "not available"
            if available:
                text = f"τ {result.thresholds[rule]:.3f} · FAR {_pct(result.far[rule])} · FRR {_pct(result.frr[rule])}"
                if rule in result.unresolved:
                    text += f"\n⚠ {result.unresolved[rule]}"
            self.rule_figures[rule].setText(text)
        eer = f" · EER {_pct(result.eer)}" if result.eer is not None else ""
        self.counts.setText(
            f"{result.counts.get('genuine', 0):,} genuine and {result.counts.get('impostor', 0):,} impostor pairs{eer}"
        )
        self.site_button.setEnabled(True)
        done = "Done. Pick the operating point, then apply it."
        self.cal_status.setText("\n".join([*result.notes, done]) if result.notes else done)
        self.rule_buttons[result.default_rule].setChecked(True)
        self._rule_picked(result.default_rule)
        self.apply_button.setEnabled(True)
        self.ctx.audit.record(
            "calibration-done", modality=result.modality, counts=result.counts, thresholds=result.thresholds
        )
        self.ready.emit(result)

    def _calibration_failed(self, message: str) -> None:
        self.run_button.setEnabled(True)
        self.site_button.setEnabled(True)
        self.cal_status.setText(f"Calibration failed: {message}")
        self.ctx.audit.record("calibration-failed", error=message)
        self.done.emit("calibration-failed")

    def _rule_picked(self, rule: str) -> None:
        self.histogram.choose(rule)

    def chosen_rule(self) -> str | None:
        for rule, button in self.rule_buttons.items():
            if button.isChecked():
                return rule
        return None

    def apply_calibration(self) -> None:
        rule = self.chosen_rule()
        if self.result is None or rule is None:
            return
        result = self.result
        self._guarded("apply-calibration", lambda: self._apply_calibration(result, rule))

    def _apply_calibration(self, result: CalibrationView, rule: str) -> None:
        services = self.ctx.require_services()

        def done(tau: float) -> None:
            self.cal_status.setText(f"Applied: the {result.modality} gate now uses τ = {tau:.3f} ({rule}).")
            self.ctx.audit.record("calibration-applied", modality=result.modality, rule=rule, threshold=tau)
            self.done.emit("calibration-applied")

        def failed(message: str) -> None:
            self.cal_status.setText(f"Not applied: {message}")
            self.ctx.audit.record("calibration-apply-failed", rule=rule, error=message)
            self.done.emit("calibration-apply-failed")

        submit(lambda _p: services.apply_calibration(result, rule), done, failed, pool=self.ctx.pool)
