"""Layers only reach the right way (README "Layout", docs/CONVENTIONS.md "Layers"), every top-level folder with
Python in it a layer with its rule (``RULES``: the top-level packages it must not import):

- store/ at the bottom; then ingest; data/ (schema, migrations, demo generators) on ingest: the demo loader ingests
  the generated logs through ingest's pipeline into the store; analytics (pure: it never writes); jobs (derived
  data computed with analytics and kept through the store's one writer); then ui and the pages (views/), and
  app.py, the entry script (the page list handed to ui.shell's router). ``cli/`` is the command
  line, on top like the pages (``python -m analytics`` and ``python -m ingest`` only delegate to it).
- Tools sit on top of everything and no product layer imports them: scripts/ (local servers, the team demo), bench/
  (benchmarks; they may use tests' helpers and the store's internals they time) and tests/. No module imports a
  page file: pages are run by the router, never imported.

Pages and ui use only the store's public API (``import store``); all write SQL lives under store/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

TOOLS = {"scripts", "bench", "tests"}
RULES = {
    "store": {"streamlit", "ui", "views", "analytics", "ingest", "jobs", "data"} | TOOLS,
    "ingest": {"streamlit", "ui", "views", "analytics", "jobs", "data"} | TOOLS,
    "data": {"streamlit", "ui", "views", "analytics", "jobs"} | TOOLS,
    "analytics": {"streamlit", "ui", "views", "jobs", "data"} | TOOLS,
    "jobs": {"streamlit", "ui", "views", "data"} | TOOLS,
    "views": {"duckdb"} | TOOLS,
    "ui": {"duckdb", "views"} | TOOLS,
    "scripts": {"views", "bench", "tests"},
    "bench": {"views"},
    "tests": {"views"},
    "cli": {"streamlit", "ui", "views"} | TOOLS,
}
# The command line (cli/) sits on top like the pages: nothing imports it but the ``__main__`` modules that delegate
# to it (``python -m analytics``, ``python -m ingest``).
ENTRY_POINTS = {"analytics/__main__.py": {"cli"}, "ingest/__main__.py": {"cli"}}
# What only writes: analytics (the command line apart) never opens a writer nor calls the store's write functions.
STORE_WRITES = {"writer", "publish", "derived", "transaction", "delete_run", "export_parquet"}
# The store's internals: what may be imported only inside store/ (others use ``store`` and its writer modules).
STORE_INTERNALS = {
    *(
        "store.backends",
        "store.sessions",
        "store.lake",
        "store.lake_session",
        "store.paths",
        "store.migrate",
        "store.query",
    ),
    *("store.filters", "store.writelock"),
}
# Asking which kind a store is (a DuckDB file, a Parquet folder, a lake): only store/ may; callers ask the Store.
KIND_ASK = re.compile(r"\b(is_lake|is_parquet_folder)\b|isinstance\([^)]*\b(Lake|FileStore|ParquetStore|LakeStore)\b")
PUBLIC_ST = ("streamlit.testing", "streamlit.components", "streamlit.column_config")
# The exceptions, named: no public API gives uploaded files back to the server's memory budget (issue 30); none
# spares the once-per-process REPL check at the first element drawn (ui.shell.skip_bare_script_check, issue 33: a
# module flag, guarded, so a renamed flag only brings the check back).
ALLOWED_INTERNALS = {
    "ui/upload_memory.py": {"streamlit.runtime.scriptrunner", "streamlit.runtime.scriptrunner.get_script_run_ctx"},
    "ui/shell.py": {"streamlit.delta_generator"},
}
WRITE_SQL = re.compile(
    r"\b(INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
    r"CREATE\s+(OR\s+REPLACE\s+)?(TEMP\s+|TEMPORARY\s+)?(TABLE|VIEW|SEQUENCE|INDEX|MACRO)|"
    r"DROP\s+(TABLE|VIEW|SEQUENCE|INDEX|MACRO|SCHEMA)|ALTER\s+TABLE)\b",
    re.IGNORECASE,
)


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``), lazy imports included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {  # ``if TYPE_CHECKING:`` imports are for annotations: no dependency at run time
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
        for n in ast.walk(block)
    }
    mods: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            mods.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods.add(node.module)
            mods.update(f"{node.module}.{alias.name}" for alias in node.names)
    return mods


def imported_roots(path: Path) -> set[str]:
    return {m.split(".")[0] for m in imported_modules(path)}


def test_every_folder_is_a_layer() -> None:
    """A new top-level folder with Python in it gets its rule in ``RULES`` (none is left unchecked)."""
    folders = {
        d.name
        for d in ROOT.iterdir()
        if d.is_dir() and not d.is_symlink() and not d.name.startswith(".") and any(d.rglob("*.py"))
    }
    assert folders - set(RULES) == set()


def test_entry_script_only_lists_pages() -> None:
    """app.py holds the page list (``PAGES``) and hands it to ui.shell's router: it imports Streamlit and ui only."""
    assert imported_roots(ROOT / "app.py") - {"__future__"} == {"streamlit", "ui"}
    # beside a folder named pages/, Streamlit would run each page file alone (its legacy multipage mode)
    assert not (ROOT / "pages").exists(), "the pages live in views/"


@pytest.mark.parametrize("layer", sorted(RULES))
def test_layer_imports(layer: str) -> None:
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files, f"{layer}/ has no Python files"
    offences = {
        name: sorted(imported_roots(f) & RULES[layer] - ENTRY_POINTS.get(name, set()))
        for f in files
        for name in [str(f.relative_to(ROOT))]
    }
    assert {f: bad for f, bad in offences.items() if bad} == {}


def test_nothing_imports_the_command_line() -> None:
    """cli/ is the top layer: no product code, script or benchmark imports it (tests may)."""
    tops = [d for d in sorted(ROOT.iterdir()) if d.is_dir() and d.name not in {"cli", "tests"} and d.name[0] != "."]
    files = sorted(ROOT.glob("*.py")) + [f for d in tops for f in sorted(d.rglob("*.py"))]
    offences = {
        name: sorted(imported_roots(f) & {"cli"} - ENTRY_POINTS.get(name, set()))
        for f in files
        for name in [f.relative_to(ROOT).as_posix()]
    }
    assert {f: bad for f, bad in offences.items() if bad} == {}
    assert "cli" in imported_roots(ROOT / "analytics" / "__main__.py"), "the check finds an import of cli"


def store_writes_used(path: Path) -> set[str]:
    """The store's write functions a file imports (``from store import writer``) or calls (``store.writer``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "store":
            used |= {a.name for a in node.names} & STORE_WRITES
            used |= {node.module.split(".")[1]} & STORE_WRITES if "." in node.module else set()
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in {"store", "rdb"}:
            used |= {node.attr} & STORE_WRITES
    return used


def test_analytics_never_writes() -> None:
    """analytics/ computes and reads; keeping a result is a job's (jobs/) or ingest's, through the one writer."""
    files = [f for f in sorted((ROOT / "analytics").rglob("*.py")) if str(f.relative_to(ROOT)) not in ENTRY_POINTS]
    offences = {str(f.relative_to(ROOT)): sorted(store_writes_used(f)) for f in files}
    assert {f: bad for f, bad in offences.items() if bad} == {}
    assert store_writes_used(ROOT / "jobs" / "irt.py"), "the check finds a writer's use"


@pytest.mark.parametrize("layer", ["analytics", "ingest", "data", "jobs", "ui", "views", "scripts"])
def test_store_internals_stay_inside_the_store(layer: str) -> None:
    files = sorted((ROOT / layer).rglob("*.py")) + ([ROOT / "app.py"] if layer == "views" else [])
    offences = {str(f.relative_to(ROOT)): sorted(imported_modules(f) & STORE_INTERNALS) for f in files}
    assert {f: bad for f, bad in offences.items() if bad} == {}


def test_callers_never_ask_which_kind_of_store() -> None:
    """Outside store/, a store is opened and asked (``store.open(db).sandbox(...)``), never checked for its kind."""
    folders = [
        d for d in sorted(ROOT.iterdir()) if d.is_dir() and d.name[0] != "." and d.name not in {"store", "tests"}
    ]
    files = [ROOT / "app.py", *(f for d in folders for f in d.rglob("*.py"))]
    offences = {
        str(f.relative_to(ROOT)): m.group(0) for f in files if (m := KIND_ASK.search(f.read_text(encoding="utf-8")))
    }
    assert offences == {}
    assert KIND_ASK.search("if isinstance(loc, Lake) or is_parquet_folder(loc):"), "the check finds an ask"
    assert any(KIND_ASK.search(f.read_text(encoding="utf-8")) for f in (ROOT / "store").rglob("*.py"))


def test_write_sql_lives_only_in_the_store() -> None:
    """One writer: no INSERT/UPDATE/DELETE/CREATE/DROP/ALTER text in product code outside store/."""
    files = [ROOT / "app.py"]
    for layer in ("analytics", "ingest", "jobs", "ui", "views"):
        files += sorted((ROOT / layer).rglob("*.py")) + sorted((ROOT / layer).rglob("*.sql"))
    offences = {
        str(f.relative_to(ROOT)): sorted({m.group(0) for m in WRITE_SQL.finditer(f.read_text(encoding="utf-8"))})
        for f in files
    }
    assert {f: bad for f, bad in offences.items() if bad} == {}
    assert WRITE_SQL.search((ROOT / "store" / "ingest_writer.py").read_text(encoding="utf-8")), (
        "the pattern finds writes"
    )


def test_pages_hold_no_sql() -> None:
    for page in (ROOT / "views").glob("*.py"):
        if page.name == "sql.py":  # the SQL console shows example queries to the user
            continue
        text = page.read_text(encoding="utf-8").upper()
        for keyword in ("SELECT ", "INSERT INTO", "CREATE TABLE"):
            assert keyword not in text, f"{page.name} contains SQL ({keyword.strip()})"


GRID_CALLS = {"dataframe", "table", "data_editor"}
GRID_EXCEPTIONS: dict[str, str] = {}  # file -> why it draws a grid itself (none today)


def grid_calls(path: Path) -> list[int]:
    """The lines where a file draws a grid itself (``st.dataframe``, ``st.table``, ``st.data_editor``, also
    through a container such as ``col.dataframe``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted(
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in GRID_CALLS
    )


def test_every_table_goes_through_the_presentation_layer() -> None:
    """Every table a person sees is drawn by ``ui.tables.show_table`` (readable headers, values by kind, a dash
    for a missing value, columns that fit): pages and the rest of ui/ never call ``st.dataframe`` themselves."""
    files = [*sorted((ROOT / "views").rglob("*.py")), *sorted((ROOT / "ui").rglob("*.py")), ROOT / "app.py"]
    found = {str(f.relative_to(ROOT)): grid_calls(f) for f in files if f != ROOT / "ui" / "tables.py"}
    assert {f: lines for f, lines in found.items() if lines and f not in GRID_EXCEPTIONS} == {}
    assert grid_calls(ROOT / "ui" / "tables.py"), "the check finds st.dataframe"


def url_state_uses(path: Path) -> list[int]:
    """The lines where a file touches ``st.query_params`` itself (a link's ``query_params=`` argument is not one)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "query_params")


def test_pages_keep_url_state_through_ui() -> None:
    """A page reads and writes its URL only through ui/ (``query_param``, ``UrlField`` with ``from_url`` and
    ``keep_in_url``, ``set_url``, ``pop_url``, ``url_params`` in ui/common.py), never ``st.query_params`` itself."""
    files = [*sorted((ROOT / "views").rglob("*.py")), ROOT / "app.py"]
    offences = {str(f.relative_to(ROOT)): url_state_uses(f) for f in files}
    assert {f: lines for f, lines in offences.items() if lines} == {}
    assert url_state_uses(ROOT / "ui" / "common.py"), "the check finds st.query_params"


def test_no_private_streamlit_api_and_no_ui_circle() -> None:
    """ui/ and views/ use Streamlit's public API only; ui.common never reaches back into ui.shell."""
    for layer in ("ui", "views"):
        for f in sorted((ROOT / layer).rglob("*.py")):
            private = {m for m in imported_modules(f) if m.startswith("streamlit.") and not m.startswith(PUBLIC_ST)}
            private -= ALLOWED_INTERNALS.get(f.relative_to(ROOT).as_posix(), set())
            assert not private, f"{f.relative_to(ROOT)} imports Streamlit internals: {sorted(private)}"
    assert not {m for m in imported_modules(ROOT / "ui" / "common.py") if m.startswith("ui.shell")}


READERS = {
    f"ingest.{m}" for m in ("csv_long", "csv_wide", "inspect_log", "lm_eval", "native", "openai_messages", "otlp")
}
# a reader may build on another only where its format is a variant of the other's (wide CSV is long CSV pivoted)
READER_VARIANTS = {"ingest.csv_wide": {"ingest.csv_long"}}


def imported_by(module: str) -> set[str]:
    """Every module a module imports: one file ``a/b.py``, or all the files of the package ``a/b/``."""
    base = ROOT / module.replace(".", "/")
    files = sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]
    return {m for f in files for m in imported_modules(f)}


def reader_of(module: str) -> str | None:
    """The reader a module is part of (``ingest.otlp.mapping`` is the ``ingest.otlp`` reader's), or None."""
    return next((r for r in READERS if module == r or module.startswith(f"{r}.")), None)


def test_validator_and_readers_stay_apart() -> None:
    """The validator (the package ingest/records/) imports no reader, and readers share helpers (ingest/jsonline.py)
    instead of each other."""
    assert not {m for m in imported_by("ingest.records") if reader_of(m)}
    for reader in sorted(READERS):
        others = {reader_of(m) or "" for m in imported_by(reader)} - {reader, ""}
        assert others <= READER_VARIANTS.get(reader, set()), f"{reader} imports {sorted(others)}"


# Every analytics feature is split by role (docs/CONVENTIONS.md): ``load`` is the only module that queries,
# ``figures`` the only one that imports plotly; compute and report modules do neither. Shared helpers that hold one
# role are named here; the SQL console's whole job is to run a person's SQL.
QUERY_CALL = re.compile(r"\b(query_df|query_rows|load_sql)\(|\.(execute|sql)\(")
QUERY_ALLOWED = {"analytics/sqlfiles.py"}
QUERY_ALLOWED_DIRS = ("analytics/sql_console/",)
PLOTLY_ALLOWED: set[str] = set()


def role_offences(path: Path) -> list[str]:
    """What a module of analytics/ does outside its role: queries outside ``load`` (``load.py``, or ``load_<part>.py``
    when a feature's loading is split), plotly outside ``figures``."""
    name = path.relative_to(ROOT).as_posix()
    found = []
    queries = QUERY_CALL.search(path.read_text(encoding="utf-8"))
    is_load = path.stem == "load" or path.stem.startswith("load_")
    if queries and not is_load and name not in QUERY_ALLOWED and not name.startswith(QUERY_ALLOWED_DIRS):
        found.append(f"queries ({queries.group(0)}) outside a load module")
    if "plotly" in imported_roots(path) and path.stem != "figures" and name not in PLOTLY_ALLOWED:
        found.append("imports plotly outside a figures module")
    return found


def test_features_are_split_by_role() -> None:
    files = sorted((ROOT / "analytics").rglob("*.py"))
    offences = {f.relative_to(ROOT).as_posix(): role_offences(f) for f in files}
    assert {f: bad for f, bad in offences.items() if bad} == {}
    assert QUERY_CALL.search((ROOT / "analytics" / "tmf" / "load.py").read_text(encoding="utf-8")), "finds queries"
    assert "plotly" in imported_roots(ROOT / "analytics" / "tmf" / "figures.py"), "finds plotly"


# No module over 700 lines in analytics/, ingest/ or cli/ (issue 34: features split by role, ingest's readers by
# record kind, the command line by what it runs).
MAX_MODULE_LINES = 700


def test_no_module_over_700_lines() -> None:
    lines = {
        f.relative_to(ROOT).as_posix(): len(f.read_text(encoding="utf-8").splitlines())
        for layer in ("analytics", "ingest", "cli")
        for f in sorted((ROOT / layer).rglob("*.py"))
    }
    assert max(lines.values()) > 100, "counts lines"
    over = {f: n for f, n in lines.items() if n > MAX_MODULE_LINES}
    assert over == {}
