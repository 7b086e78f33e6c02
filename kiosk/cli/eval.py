"""`kiosk eval locomo` (the paper's Owner / Non-owner protocol), `kiosk eval household` and `kiosk eval report`."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from kiosk.cli.common import JsonOption, config, emit, handle_errors
from kiosk.config import KioskConfig
from kiosk.errors import DataError


def _command_line() -> str:
    return "kiosk " + " ".join(shlex.quote(arg) for arg in sys.argv[1:])


def _steps(steps_off: str | None) -> tuple[str, ...]:
    """--steps-off "a, b" -> ("a", "b")."""
    return tuple(step.strip() for step in steps_off.split(",") if step.strip()) if steps_off else ()


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """A rich progress bar per stage on stderr (stdout stays clean for --json)."""
    if not enabled:
        yield lambda stage, done, total: None
        return
    if not sys.stderr.isatty():
        yield _log_lines()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bars = Progress(
        TextColumn("{task.description:<22}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )
    tasks: dict[str, Any] = {}

    def update(stage: str, done: int, total: int) -> None:
        label = stage.split(":")[0]
        if label not in tasks:
            tasks[label] = bars.add_task(label, total=total)
        bars.update(tasks[label], completed=done, total=total, description=stage)

    with bars:
        yield update


def _log_lines() -> Any:
    """Progress as occasional plain lines (for nohup logs): each stage's start, every 10 s, and its end."""
    import time

    last: dict[str, float] = {}
    started = time.monotonic()

    def update(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage not in last or done == total or now - last[stage] >= 10:
            last[stage] = now
            print(f"[{now - started:7.1f} s] {stage} {done}/{total}", file=sys.stderr, flush=True)

    return update


def _apply_llm(cfg: KioskConfig, llm: str | None, endpoint: str | None, endpoint_model: str | None) -> None:
    if llm and endpoint:
        raise DataError("--llm and --llm-endpoint exclude each other", "give one of them")
    if endpoint:
        cfg.llm.backend = "openai"
        cfg.llm.openai.endpoint_url = endpoint
        if endpoint_model:
            cfg.llm.openai.endpoint_model = endpoint_model
    elif llm:
        path = Path(llm)
        if path.suffix == ".gguf" or path.exists():
            cfg.llm.gguf_path = path
        else:
            cfg.llm.model = llm  # a manifest name


def _summary(results: dict[str, Any]) -> str:
    from kiosk.eval.report import score_table

    lines = [score_table(results["conditions"], results["gap"]["f1"]), ""]
    lines.append(f"leaks: {results['leaks']['notes']} (false matches: {results['leaks']['from_false_matches']})")
    for path in results.get("written", []):
        lines.append(f"wrote {path}")
    return "\n".join(lines)


def _household_summary(results: dict[str, Any]) -> str:
    from kiosk.eval.household_report import score_header, score_rows

    lines = [*score_header("profile"), *score_rows(results["profile"]["name"], results["scores"])]
    refused = {h: s["notes_refused"] for h, s in results["households"].items() if s["notes_refused"]}
    if refused:
        lines.append(f"notes the gate did not store (author not verified): {refused}")
    lines += [f"wrote {path}" for path in results.get("written", [])]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    sub = typer.Typer(help="Paper-style evaluations on ../shared/data.", no_args_is_help=True)

    @sub.command("locomo")
    @handle_errors
    def locomo(
        modality: str = typer.Option(..., "--modality", help="face (LFW identities) or palm (Tongji identities)."),
        ratio: float = typer.Option(0.1, "--ratio", help="Share of categories 1/2/4 questions, per conversation."),
        seed: int = typer.Option(0, "--seed", help="Seed of the question subset and identity bindings."),
        llm: str | None = typer.Option(None, "--llm", help="GGUF file or manifest name of the answering LLM."),
        llm_endpoint: str | None = typer.Option(None, "--llm-endpoint", help="OpenAI-compatible server URL."),
        endpoint_model: str | None = typer.Option(None, "--endpoint-model", help="Model name at the endpoint."),
        construct: str = typer.Option("fast", "--construct", help="Note construction: fast or llm."),
        gate: str = typer.Option("best-match", "--gate", help="Gate policy: threshold or best-match."),
        conversations: int | None = typer.Option(None, "--conversations", help="Use the first N conversations."),
        sessions: int | None = typer.Option(None, "--sessions", help="Keep the first S sessions of each."),
        max_questions: int | None = typer.Option(None, "--max-questions", help="Cap the question subset."),
        held_out: bool = typer.Option(
            False,
            "--held-out",
            help="Draw the questions (by --seed) from outside the seed-0 evaluation sample: a development set.",
        ),
        answer_tokens: int = typer.Option(32, "--answer-tokens", help="Longest answer in tokens."),
        k: int = typer.Option(
            10, "--k", help="Notes retrieved into each prompt (the paper's protocol: 10; another K is a variant)."
        ),
        retrieval_only: bool = typer.Option(
            False, "--retrieval-only", help="Gate, leaks and evidence recall@10 only: no LLM answers."
        ),
        llm_threads: int = typer.Option(
            1, "--llm-threads", help="llama.cpp threads; 1 is far faster on a shared, oversubscribed CPU (0 = all)."
        ),
        conditions: str | None = typer.Option(
            None, "--conditions", help="Comma-separated subset of owner,no_memory,non_owner,ungated,gold_evidence."
        ),
        identities: str | None = typer.Option(None, "--identities", help="Comma-separated identities, one per user."),
        threshold: float | None = typer.Option(
            None, "--threshold", help="Override the calibrated tau (recorded as a manual threshold)."
        ),
        operating_point: str | None = typer.Option(
            None,
            "--operating-point",
            help="Use a named operating point of the calibration (e.g. tau_d, eer, strict) instead of its chosen rule.",
        ),
        profile: str | None = typer.Option(
            None, "--profile", help="Answer profile (default: the configured llm.answer_profile)."
        ),
        steps_off: str | None = typer.Option(
            None, "--steps-off", help="Comma-separated steps of the profile to leave out (e.g. complete-lists)."
        ),
        output: Path | None = typer.Option(None, "--output", help="Results directory (default bench/results)."),
        name: str | None = typer.Option(None, "--name", help="Results file stem (default locomo_<modality>_<llm>)."),
        as_json: bool = JsonOption,
    ) -> None:
        """Owner vs Non-owner on LoCoMo with ten users in one store; writes JSON + a markdown table."""
        from kiosk.eval.protocol import CONDITIONS, EvalOptions, run_locomo

        if modality not in ("face", "palm"):
            raise DataError(f"unknown modality {modality!r}", "use --modality face or --modality palm")
        if construct not in ("fast", "llm"):
            raise DataError(f"unknown construction {construct!r}", "use --construct fast or llm")
        if gate not in ("threshold", "best-match"):
            raise DataError(f"unknown gate policy {gate!r}", "use --gate threshold or best-match")
        if k < 1:
            raise DataError(f"--k {k} is below 1", "give the number of notes per prompt (the protocol's is 10)")
        cfg = config()
        _apply_llm(cfg, llm, llm_endpoint, endpoint_model)
        cfg.llm.threads = llm_threads
        chosen = tuple(c.strip() for c in conditions.split(",")) if conditions else CONDITIONS
        unknown = [c for c in chosen if c not in CONDITIONS]
        if unknown:
            raise DataError(f"unknown condition(s) {', '.join(unknown)}", f"choose from {', '.join(CONDITIONS)}")
        options = EvalOptions(
            modality=modality,  # type: ignore[arg-type]
            ratio=ratio,
            seed=seed,
            construct=construct,  # type: ignore[arg-type]
            gate_policy=gate,  # type: ignore[arg-type]
            conversations=conversations,
            sessions=sessions,
            max_questions=max_questions,
            held_out_from=0 if held_out else None,
            answer_tokens=answer_tokens,
            k=k,
            answer=not retrieval_only,
            identities=[s.strip() for s in identities.split(",")] if identities else None,
            conditions=chosen,  # type: ignore[arg-type]
            results_name=name,
            threshold=threshold,
            operating_point=operating_point,
            profile=profile,
            steps_off=_steps(steps_off),
            command=_command_line(),
        )
        if output is not None:
            options.results_dir = output
        with _progress(sys.stderr.isatty() or not as_json) as progress:
            results = run_locomo(cfg, options, progress)
        emit(results, as_json, _summary)

    @sub.command("household")
    @handle_errors
    def household(
        data: Path | None = typer.Option(
            None, "--data", help="Folder of household *.toml files (default bench/data/household)."
        ),
        split: str = typer.Option("all", "--split", help="dev, test, holdout or all."),
        modality: str = typer.Option("palm", "--modality", help="palm (Tongji identities) or face (LFW)."),
        llm: str | None = typer.Option(None, "--llm", help="GGUF file or manifest name of the answering LLM."),
        llm_threads: int = typer.Option(
            1, "--llm-threads", help="llama.cpp threads; 1 is far faster on a shared, oversubscribed CPU (0 = all)."
        ),
        profile: str | None = typer.Option(
            None, "--profile", help="Answer profile (default: the configured llm.answer_profile)."
        ),
        steps_off: str | None = typer.Option(
            None, "--steps-off", help="Comma-separated steps of the profile to leave out (e.g. complete-lists)."
        ),
        output: Path | None = typer.Option(
            None, "--output", help="Write JSON + markdown into this folder (default: nothing written)."
        ),
        name: str | None = typer.Option(None, "--name", help="Results file stem (default household_<modality>_…)."),
        relevance_floor: float | None = typer.Option(
            None, "--relevance-floor", min=0.0, max=1.0, help="Try another relevance floor (default: the shipped one)."
        ),
        as_json: bool = JsonOption,
    ) -> None:
        """The household question set at the terminal: F1, EM, harmful answers, "I don't know", leaks."""
        from dataclasses import replace

        from kiosk.eval.household import HouseholdOptions, run_household
        from kiosk.eval.household_data import DEFAULT_DIR
        from kiosk.retrieval.tuning import DEFAULT_TUNING

        if modality not in ("face", "palm"):
            raise DataError(f"unknown modality {modality!r}", "use --modality palm or --modality face")
        cfg = config()
        _apply_llm(cfg, llm, None, None)
        cfg.llm.threads = llm_threads
        options = HouseholdOptions(
            data_dir=data or DEFAULT_DIR,
            split=split,
            modality=modality,  # type: ignore[arg-type]
            profile=profile,
            steps_off=_steps(steps_off),
            results_dir=output,
            results_name=name,
            command=_command_line(),
            tuning=DEFAULT_TUNING
            if relevance_floor is None
            else replace(DEFAULT_TUNING, relevance_floor=relevance_floor),
        )
        with _progress(sys.stderr.isatty() or not as_json) as progress:
            results = run_household(cfg, options, progress)
        emit(results, as_json, _household_summary)

    @sub.command("report")
    @handle_errors
    def report(
        results_json: Path = typer.Argument(..., help="A locomo_*.json written by `kiosk eval locomo`."),
        as_json: bool = JsonOption,
    ) -> None:
        """Re-render the markdown of a results JSON (adds the gold-evidence gap analysis when missing)."""
        import json

        from kiosk.eval.analysis import gold_gap, gold_gap_markdown
        from kiosk.eval.locomo import load_conversations, locomo_path
        from kiosk.eval.report import write_results

        try:
            results = json.loads(results_json.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read results {results_json} ({exc})", "give a locomo_*.json file") from exc
        answered = all(results.get("conditions", {}).get(c, {}).get("scores") for c in ("owner", "gold_evidence"))
        if "gold_gap" not in results and answered:
            conversations = load_conversations(locomo_path(config().paths.eval_data_dir))
            evidence = {q.key: q.evidence for c in conversations for q in c.questions}
            results["gold_gap"] = gold_gap(results["answers"], evidence)
            results["gold_gap_analysis"] = gold_gap_markdown(results["gold_gap"])
        paths = write_results(results, results_json)
        emit({"written": [str(p) for p in paths]}, as_json, lambda r: "\n".join(f"wrote {p}" for p in r["written"]))

    app.add_typer(sub, name="eval")
