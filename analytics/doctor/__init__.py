"""doctor: verify a database (``python -m analytics doctor``); the package re-exports its public names."""

from analytics.doctor.load import (
    DOMAINS,
    KEYS,
    ORPHANS,
    TABLES,
    DoctorReport,
    check,
    constraint_checks,
    text_report,
    to_json,
)

__all__ = [
    "DOMAINS",
    "KEYS",
    "ORPHANS",
    "TABLES",
    "DoctorReport",
    "check",
    "constraint_checks",
    "text_report",
    "to_json",
]
