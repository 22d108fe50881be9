"""Input errors with locations: every problem is reported as ``location: field: reason``."""

from __future__ import annotations

from dataclasses import dataclass

from store import RunlensError

MAX_REPORTED = 200


@dataclass(frozen=True)
class Problem:
    """One problem in an input file.

    Attributes:
        location: ``file:line`` for line formats, ``file:$.json.path`` or ``archive.zip!member`` for others.
        field: the offending field (``-`` when the whole line or file is at fault).
        reason: what is wrong, in words a user can act on.
    """

    location: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.location}: {self.field}: {self.reason}"


class IngestError(RunlensError):
    """A file failed validation; nothing of it was written. Holds every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        shown = [str(p) for p in problems[:MAX_REPORTED]]
        if len(problems) > MAX_REPORTED:
            shown.append(f"... and {len(problems) - MAX_REPORTED} more problems")
        super().__init__("\n".join(shown))

    def __reduce__(self) -> tuple[type[IngestError], tuple[list[Problem]]]:
        return (IngestError, (self.problems,))  # picklable: errors cross from validation worker processes

    @classmethod
    def single(cls, location: str, field: str, reason: str) -> IngestError:
        """An error with exactly one problem."""
        return cls([Problem(location, field, reason)])


class ProblemCollector:
    """Collects problems instead of raising on the first; raises them all at the end."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.warnings: list[str] = []

    def warn(self, location: str, reason: str) -> None:
        """Record something the user should know that does not refuse the file (``file:line: reason``)."""
        self.warnings.append(f"{location}: {reason}")

    def add(self, location: str, field: str, reason: str) -> None:
        """Record one problem."""
        self.problems.append(Problem(location, field, reason))

    def __bool__(self) -> bool:
        return bool(self.problems)

    def raise_if_any(self) -> None:
        """Raise an IngestError holding every collected problem, if there is one."""
        if self.problems:
            raise IngestError(self.problems)
