"""doctor's verdict on what it read (pure): every problem found, and the warnings that are not problems."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FileFacts:
    """One ingested file: the attempts, steps and rows digest ingest recorded, and those the store holds now."""

    path: str
    n_attempts: int
    n_steps: int
    rows_digest: str | None
    found_attempts: int
    found_steps: int
    found_digest: str | None
    is_changed_on_disk: bool  # a native file still on disk whose content hash is not the one ingested (if re-hashed)


@dataclass(frozen=True)
class StoreFacts:
    """What doctor read from a store; nothing is counted in a store with no schema (version 0)."""

    schema_version: int
    latest_version: int
    counts: dict[str, int]  # rows per table (load.TABLES)
    orphans: dict[str, int]  # rows per check (load.ORPHANS)
    constraints: dict[str, int]  # rows breaking each key or domain (0: held)
    files: list[FileFacts]
    # rows of each table the writer keeps for the pages (store/aggregates.py) that differ from a recomputation
    aggregates: dict[str, int] = field(default_factory=dict)


@dataclass
class DoctorReport:
    """Everything doctor found; ``ok`` is False when any problem was found."""

    path: str
    schema_version: int
    latest_version: int
    counts: dict[str, int] = field(default_factory=dict)
    orphans: dict[str, int] = field(default_factory=dict)
    constraints: dict[str, int] = field(default_factory=dict)  # rows breaking a key or a domain (0: held)
    aggregates: dict[str, int] = field(default_factory=dict)  # kept rows differing from their attempts (0: equal)
    files_checked: int = 0
    file_problems: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def diagnose(path: str, facts: StoreFacts) -> DoctorReport:
    """The report on a store at ``path`` from what :func:`analytics.doctor.load.load` read of it."""
    rep = DoctorReport(path=path, schema_version=facts.schema_version, latest_version=facts.latest_version)
    if rep.schema_version != rep.latest_version:
        rep.problems.append(
            f"schema version {rep.schema_version}, expected {rep.latest_version} (open it with a "
            "writer, e.g. `python -m ingest`, to migrate)"
        )
    rep.counts = dict(facts.counts)
    rep.orphans = dict(facts.orphans)
    rep.problems.extend(f"{n} {name}" for name, n in facts.orphans.items() if n)
    rep.constraints = dict(facts.constraints)
    rep.problems.extend(f"{n} {name}" for name, n in facts.constraints.items() if n)
    rep.aggregates = dict(facts.aggregates)
    rep.problems.extend(
        f"{n} rows of {table} differ from what the attempts give (rebuild them: python -m analytics doctor "
        "--rebuild-aggregates)"
        for table, n in facts.aggregates.items()
        if n
    )
    for f in facts.files:
        rep.files_checked += 1
        if (f.found_attempts, f.found_steps) != (f.n_attempts, f.n_steps):
            rep.file_problems.append(
                f"{f.path}: recorded {f.n_attempts} attempts / {f.n_steps} steps, "
                f"found {f.found_attempts} / {f.found_steps}"
            )
        elif f.rows_digest is not None and f.found_digest != f.rows_digest:
            rep.file_problems.append(f"{f.path}: its attempt rows changed since ingest (digest mismatch)")
        if f.is_changed_on_disk:
            rep.warnings.append(
                f"{f.path}: the file on disk changed since it was ingested (content hash); "
                "re-ingest it to load the new content"
            )
    rep.problems.extend(rep.file_problems)
    return rep
