"""doctor's report: the JSON of ``python -m analytics doctor --json`` and its text."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from analytics.doctor.compute import DoctorReport


def to_json(rep: DoctorReport) -> dict[str, Any]:
    """The report of ``python -m analytics doctor --json``."""
    return {**asdict(rep), "ok": rep.ok}


def text_report(path: str, rep: DoctorReport) -> str:
    """Schema version, row counts, files checked, warnings, then OK or the problems."""
    lines = [f"{path}: schema version {rep.schema_version} (latest {rep.latest_version})"]
    lines += [f"  {table:<16} {n:>12,}" for table, n in rep.counts.items()]
    lines.append(f"  files checked    {rep.files_checked:>12,}")
    held = sum(1 for n in rep.constraints.values() if not n)
    lines.append(f"  keys and domains {held:>12,} of {len(rep.constraints)} hold")
    equal = sum(1 for n in rep.aggregates.values() if not n)
    lines.append(f"  kept aggregates  {equal:>12,} of {len(rep.aggregates)} equal their attempts")
    lines += [f"warning: {w}" for w in rep.warnings]
    lines.append("OK" if rep.ok else "PROBLEMS:\n  " + "\n  ".join(rep.problems))
    return "\n".join(lines)
