"""The offline planner's success on LIBERO and LIBERO-PRO, next to published VLA results.

    harness eval libero_spatial --episodes 30 --workers 2 --out evals/libero_spatial
    ...                                               # one eval folder per suite
    python -m benchmarks.libero_suites evals/libero_*  # this table

Reads each eval folder's ``episodes.jsonl`` (what ``harness eval`` wrote; nothing is
re-run) and prints, per suite: episodes run, achieved, the success rate with its 95 %
Wilson interval, safety-envelope blocks, the physics steps the simulator audited against
the profile and how many of them had the gripper outside it, the episodes whose model
claimed ``achieved`` while LIBERO's check denied it and those whose report (as the user
reads it) states an outcome other than the harness's verdict, the mean wall time of an episode and
its mean model tokens (in / out, what the eval summary counts; the offline planner's are
estimates and cost nothing); then the failed episodes grouped by the skill given up on and
the goal predicate LIBERO found false; then the published success rates this project cites
(:data:`PUBLISHED`, and for a LIBERO-PRO variant :data:`PUBLISHED_PRO`), each with its
source. Our rows use privileged skills (motions computed from the simulator's
object poses) and a scripted planner; the published rows are learned visuomotor policies.
The two are not the same kind of system, and the table says so.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

from harness.fleet.stats import wilson_interval
from harness.planner.resolve import SCENE_FAULT
from harness.world.outcome_report import OUTCOME_WORDS, outcome_statements

__all__ = ["PUBLISHED", "PUBLISHED_PRO", "failures", "main", "rows"]

PUBLISHED: dict[str, dict[str, float]] = {
    "OpenVLA (fine-tuned)": {
        "libero_spatial": 84.7,
        "libero_object": 88.4,
        "libero_goal": 79.2,
        "libero_10": 53.7,
        "average": 76.5,
    },
    "pi0": {
        "libero_spatial": 96.8,
        "libero_object": 98.8,
        "libero_goal": 95.8,
        "libero_10": 85.2,
        "average": 94.2,
    },
    "OpenVLA-OFT": {
        "libero_spatial": 97.6,
        "libero_object": 98.4,
        "libero_goal": 97.9,
        "libero_10": 94.5,
        "average": 97.1,
    },
}
"""Success rates (%) on LIBERO's four suites as reported in Kim, Finn & Liang, "Fine-Tuning
Vision-Language-Action Models: Optimizing Speed and Success" (arXiv:2502.19645, 2025), Table I
(500 episodes per suite: 50 initial states x 10 tasks); the OpenVLA row is the fine-tuned
OpenVLA of Kim et al., "OpenVLA" (arXiv:2406.09246, 2024)."""


PRO_KINDS = {"object": "Obj", "swap": "Pos", "lan": "Sem", "task": "Task", "env": "Env"}
"""LIBERO-PRO's suite suffix -> the column of its leaderboard that reports it (``_swap`` is
its position perturbation, ``_lan`` its semantic one, the paraphrased instructions)."""

PUBLISHED_PRO: dict[str, dict[str, dict[str, float]]] = {
    "OpenVLA": {
        "libero_goal": {"Obj": 96, "Pos": 0, "Sem": 98, "Task": 0, "Env": 98},
        "libero_spatial": {"Obj": 97, "Pos": 0, "Sem": 97, "Task": 0, "Env": 89},
        "libero_10": {"Obj": 81, "Pos": 0, "Sem": 96, "Task": 0, "Env": 85},
        "libero_object": {"Obj": 98, "Pos": 0, "Sem": 98, "Task": 0, "Env": 0},
    },
    "pi0": {
        "libero_goal": {"Obj": 94, "Pos": 0, "Sem": 93, "Task": 0, "Env": 39},
        "libero_spatial": {"Obj": 95, "Pos": 0, "Sem": 97, "Task": 0, "Env": 60},
        "libero_10": {"Obj": 79, "Pos": 0, "Sem": 82, "Task": 0, "Env": 27},
        "libero_object": {"Obj": 94, "Pos": 0, "Sem": 90, "Task": 0, "Env": 29},
    },
    "pi0.5": {
        "libero_goal": {"Obj": 97, "Pos": 38, "Sem": 97, "Task": 0, "Env": 46},
        "libero_spatial": {"Obj": 97, "Pos": 20, "Sem": 97, "Task": 1, "Env": 46},
        "libero_10": {"Obj": 92, "Pos": 8, "Sem": 93, "Task": 1, "Env": 46},
        "libero_object": {"Obj": 98, "Pos": 17, "Sem": 96, "Task": 1, "Env": 73},
    },
}
"""Success rates (%) under LIBERO-PRO's perturbations as its authors report them: the
leaderboard of the LIBERO-PRO repository's README (github.com/Zxy-MLlab/LIBERO-PRO, read
at commit 2b910b5; Zhou et al., "LIBERO-PRO: Towards Robust and Fair Evaluation of
Vision-Language-Action Models Beyond Memorization", arXiv:2510.03827, 2025), columns Obj
(``_object``), Pos (``_swap``), Sem (``_lan``), Task (``_task``), Env (``_env``). The same
policies score 82-99 % on the unperturbed suites there; under the position and task
perturbations they fall to 0-38 %."""


def pro_variant(suite: str) -> tuple[str, str] | None:
    """(main suite, leaderboard column) of a LIBERO-PRO variant's name, else None."""
    for kind, column in PRO_KINDS.items():
        main = suite.removesuffix(f"_{kind}")
        if main != suite and main in PUBLISHED["pi0"]:
            return main, column
    return None


def rows(folders: list[Path]) -> list[dict[str, object]]:
    out = []
    for folder in folders:
        records_file = folder / "episodes.jsonl"
        if not records_file.is_file():
            continue
        records = [json.loads(line) for line in records_file.read_text().splitlines() if line]
        if not records:
            continue
        manifest = json.loads((folder / "manifest.json").read_text())
        n = len(records)
        wins = sum(1 for r in records if r.get("success"))
        low, high = wilson_interval(wins, n)
        out.append(
            {
                "suite": manifest.get("suite", folder.name),
                "check": records[0].get("check", "achieved"),
                "episodes": n,
                "tasks": len({r["task"] for r in records}),
                "successes": wins,
                "rate": wins / n,
                "low": low,
                "high": high,
                "blocks": sum(int(r.get("safety_blocks", 0)) for r in records),
                "errors": sum(1 for r in records if r.get("status") == "error"),
                "denied": _denied(records),
                **_steps(records),
                "wall_s": statistics.mean(float(r.get("wall_s", 0.0)) for r in records),
                "tokens": _tokens(records),
                **_reuse(records),
            }
        )
    return out


def _tokens(records: list[dict[str, object]]) -> str:
    """Mean model tokens in / out of an episode ("-" where no record kept them)."""
    kept = [r for r in records if r.get("tokens_in") is not None]
    if not kept:
        return "-"
    tokens_in = statistics.mean(int(r["tokens_in"]) for r in kept)  # type: ignore[call-overload]
    tokens_out = statistics.mean(int(r.get("tokens_out") or 0) for r in kept)  # type: ignore[call-overload]
    return f"{tokens_in:,.0f} / {tokens_out:,.0f}"


def _denied(records: list[dict[str, object]]) -> str:
    """``claims / reports``: episodes whose model claimed ``achieved`` while the task check
    said otherwise (the model's word against the check; "-" where no record kept the
    claim, as in folders written before it was kept), and episodes whose report, as the
    user reads it, has an ``Outcome`` line that is not the harness's verdict (the harness's
    guarantee: :func:`harness.world.outcome_report.reconcile_report`)."""
    claims = "-"
    if any("claim" in r for r in records):
        claims = str(
            sum(
                1
                for r in records
                if r.get("claim") == "achieved" and r.get("outcome") != "achieved"
            )
        )
    reports = sum(1 for r in records if _report_contradicts(r))
    return f"{claims} / {reports}"


def _report_contradicts(record: dict[str, object]) -> bool:
    """Whether the record's report states an outcome other than the record's verdict."""
    word = OUTCOME_WORDS.get(str(record.get("outcome", "unverified")), "unverified")
    return any(value != word for _, value in outcome_statements(str(record.get("report", ""))))


_GAVE_UP = re.compile(r"^Gave up: (?P<tool>[a-z_]+) ")
_NOT_HELD = re.compile(r"not: (?P<first>\((?P<name>[A-Za-z]+) [^)]*\))")


def failures(folders: list[Path]) -> Counter[tuple[str, str, str]]:
    """Failed episodes grouped by (suite, the skill the planner gave up on, the first goal
    predicate LIBERO's check found false, with object numbers dropped). A refusal that names
    the scene as given as the cause (a thing out of reach before anything moved) is its own
    group, "(the scene's doing)", apart from the hands' failures."""
    grouped: Counter[tuple[str, str, str]] = Counter()
    for folder in folders:
        records_file = folder / "episodes.jsonl"
        if not records_file.is_file():
            continue
        suite = json.loads((folder / "manifest.json").read_text()).get("suite", folder.name)
        for line in records_file.read_text().splitlines():
            record = json.loads(line) if line else None
            if record is None or record.get("success"):
                continue
            skill = "(no skill failed)"
            for text in str(record.get("report", "")).splitlines():
                if match := _GAVE_UP.match(text):
                    skill = match["tool"]
                    break
                if text.startswith("I did not move anything"):
                    skill = "(refused: " + text.split(":", 1)[-1].strip()[:40] + ")"
                    break
            if SCENE_FAULT in str(record.get("report", "")):
                skill = f"({SCENE_FAULT})"
            if record.get("status") not in ("completed",):
                skill = f"({record.get('status')})"
            found = _NOT_HELD.search(str(record.get("outcome_summary", "")))
            check = re.sub(r"_\d+", "", found["first"]) if found else "-"
            grouped[(str(suite), skill, check)] += 1
    return grouped


def _steps(records: list[dict[str, object]]) -> dict[str, str]:
    """Physics steps audited against the profile, and those outside it ("-" where an
    episode's driver kept no audit, as in folders written before the audit existed)."""
    audited = [r for r in records if r.get("physics_steps") is not None]
    if len(audited) < len(records):
        return {"steps": "-" if not audited else f"{len(audited)} of {len(records)} episodes"}
    steps = sum(int(r["physics_steps"]) for r in audited)  # type: ignore[call-overload]
    outside = sum(int(r["steps_outside"]) for r in audited)  # type: ignore[call-overload]
    return {"steps": f"{steps:,} / {outside}"}


def _reuse(records: list[dict[str, object]]) -> dict[str, float | None]:
    """Mean wall time of a worker's first episode of a task (the env is built) and of its
    later ones (the same env reset to another initial state)."""
    seen: set[tuple[str, str]] = set()
    first: list[float] = []
    later: list[float] = []
    for record in sorted(records, key=lambda r: float(r.get("finished_at", 0.0))):  # type: ignore[arg-type]
        key = (str(record.get("worker", "")), str(record["task"]))
        (later if key in seen else first).append(float(record.get("wall_s", 0.0)))  # type: ignore[arg-type]
        seen.add(key)
    return {
        "first_s": statistics.mean(first) if first else None,
        "reset_s": statistics.mean(later) if later else None,
    }


def task_lines(folder: Path) -> list[tuple[str, str]]:
    """(task, "episodes | successes | why the others failed") for one eval folder."""
    records_file = folder / "episodes.jsonl"
    if not records_file.is_file():
        return []
    by_task: dict[str, list[dict[str, object]]] = {}
    for line in records_file.read_text().splitlines():
        if line:
            record = json.loads(line)
            by_task.setdefault(str(record["task"]), []).append(record)
    out = []
    for task in sorted(by_task, key=_task_index):
        records = by_task[task]
        wins = sum(1 for r in records if r.get("success"))
        reasons = sorted({_why(r) for r in records if not r.get("success")} - {""})
        out.append((task, f"{len(records)} | {wins} | {'; '.join(reasons)[:160]}"))
    return out


def _s(value: object) -> str:
    return "-" if value is None else f"{value:.0f}"


def _task_index(task: str) -> int:
    head = task.split("-")[0]
    return int(head[1:]) if head[1:].isdigit() else 0


def _why(record: dict[str, object]) -> str:
    for line in str(record.get("report", "")).splitlines():
        if line.startswith(("Gave up:", "I did not move")):
            return line.replace("|", "/")[:90]
    summary = str(record.get("outcome_summary", ""))
    return (summary or str(record.get("status", ""))).replace("|", "/")[:90]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="eval folders (harness eval --out)")
    parser.add_argument("--tasks", action="store_true", help="also one line per task")
    args = parser.parse_args(argv)
    table = rows(args.folders)
    if not table:
        print("no episodes found in the folders given", file=sys.stderr)
        return 2
    print(
        "| suite | success check | tasks | episodes | successes | rate | 95 % Wilson | "
        "envelope blocks | physics steps / outside the profile | errors | model claims / "
        "reports stating what the check denies | s / episode | env built / reset (s) | "
        "tokens in / out per episode |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in table:
        print(
            f"| {row['suite']} | {row['check']} | {row['tasks']} | {row['episodes']} | "
            f"{row['successes']} | {100 * row['rate']:.0f} % | "  # type: ignore[operator]
            f"{100 * row['low']:.0f}-{100 * row['high']:.0f} % | {row['blocks']} | "  # type: ignore[operator]
            f"{row['steps']} | {row['errors']} | {row['denied']} | {row['wall_s']:.0f} | "
            f"{_s(row['first_s'])} / {_s(row['reset_s'])} | {row['tokens']} |"
        )
    grouped = failures(args.folders)
    if grouped:
        print()
        print("| suite | failed skill | first goal predicate LIBERO found false | episodes |")
        print("|---|---|---|---|")
        for (suite, skill, check), count in sorted(grouped.items(), key=lambda i: (i[0][0], -i[1])):
            print(f"| {suite} | {skill} | {check} | {count} |")
    if args.tasks:
        print()
        print("| suite | task | episodes | successes | how the others ended |")
        print("|---|---|---|---|---|")
        for folder in args.folders:
            for task, line in task_lines(folder):
                print(f"| {folder.name} | {task} | {line} |")
    print()
    print(
        "| published (learned policies) | libero_spatial | libero_object | libero_goal | "
        "libero_10 | average |"
    )
    print("|---|---|---|---|---|---|")
    for name, values in PUBLISHED.items():
        cells = " | ".join(
            f"{values[k]:.1f} %"
            for k in ("libero_spatial", "libero_object", "libero_goal", "libero_10", "average")
        )
        print(f"| {name} | {cells} |")
    variants = sorted({v for row in table if (v := pro_variant(str(row["suite"])))})
    if variants:
        print()
        print(
            "| LIBERO-PRO, published (learned policies) | "
            + " | ".join(
                f"{main}_{next(k for k, c in PRO_KINDS.items() if c == column)}"
                for main, column in variants
            )
            + " |"
        )
        print("|---|" + "---|" * len(variants))
        for name, suites in PUBLISHED_PRO.items():
            cells = " | ".join(f"{suites[main][column]:.0f} %" for main, column in variants)
            print(f"| {name} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
