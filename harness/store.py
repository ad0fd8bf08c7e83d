"""The embedded results database (SQLite, ``results/harness.db``).

Its layout is versioned: ``PRAGMA user_version`` holds :data:`DB_SCHEMA_VERSION`. The layout of
a version never changes (a test fails when the schema text changes without a new version);
a new version migrates older databases forward when it first writes to them, and a harness
refuses a database of a newer version than it knows, rather than misreading it. Tools such as
sqlite-utils and datasette can open it directly (docs/database.md).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing, contextmanager
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from harness.errors import UserInputError, first_validation_error
from harness.models import BenchmarkResult

DB_NAME = "harness.db"
#: The layout of ``runs`` below; bump it (and migrate older files in ``_connect``) on any change.
DB_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id        TEXT PRIMARY KEY,
    created_at    TEXT NOT NULL,
    case_name     TEXT NOT NULL,
    framework     TEXT NOT NULL,
    vendor        TEXT NOT NULL,
    status        TEXT NOT NULL,
    final_result  REAL,
    unit          TEXT,
    config_hash   TEXT NOT NULL,
    source        TEXT NOT NULL,
    source_sha256 TEXT UNIQUE,
    run_dir       TEXT,
    result_json   TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_config ON runs (config_hash);
CREATE INDEX IF NOT EXISTS runs_by_case ON runs (case_name, framework, vendor);
"""


class NewerStoreError(UserInputError):
    """The results database was written by a newer harness (a schema version this one does
    not know). One line, exit code 2."""


class DamagedStoreError(UserInputError):
    """The results database cannot be read or written: not a SQLite file, a damaged one, or a
    stored result that is no longer valid JSON of a result. One line, exit code 2."""


class ResultStore:
    """Every run (launched or ingested) is one row; the full result is kept as JSON."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.path = self.root / DB_NAME

    def _damaged(self, exc: Exception) -> DamagedStoreError:
        return DamagedStoreError(
            f"results database {self.path} cannot be used ({exc}); move it aside (a new one is "
            "created) or pass --output with another results folder")

    @contextmanager
    def _damage_reported(self):
        """A damaged file (not SQLite, malformed) becomes a DamagedStoreError; an
        ``sqlite3.OperationalError`` (locked, full disk, read-only file) stays what it is: a
        storage problem, which moving the database aside would not mend."""
        try:
            yield
        except sqlite3.OperationalError:
            raise
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None

    def _connect(self) -> sqlite3.Connection:
        """A connection for writing: creates the folder, the database and its indexes."""
        self.root.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30)
        try:
            with self._damage_reported():
                self._check_version(conn)
                conn.executescript(_SCHEMA)
                # Version 0 (no version recorded) is the same layout as version 1: databases
                # written before the version was kept are stamped, not changed.
                conn.execute(f"PRAGMA user_version = {DB_SCHEMA_VERSION}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_version(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > DB_SCHEMA_VERSION:
            raise NewerStoreError(
                f"results database {self.path} has schema version {version}, newer than this "
                f"harness reads (up to {DB_SCHEMA_VERSION}); upgrade harness, or pass --output "
                "with another results folder")

    def _read(self, query: str, args=()) -> list[tuple]:
        """Rows of a read-only query. Reading never writes (a full disk, a read-only
        results folder or one without a database yet all read fine): no database is no rows."""
        if not self.path.exists():
            return []
        try:
            with self._damage_reported(), closing(sqlite3.connect(
                    f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)) as conn:
                self._check_version(conn)
                return conn.execute(query, args).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise

    def _result(self, text: str) -> BenchmarkResult:
        """A stored result; one that no longer validates makes the whole database suspect."""
        try:
            return BenchmarkResult.model_validate_json(text)
        except ValidationError as exc:
            key, message, _ = first_validation_error(exc)
            raise self._damaged(f"a stored result is invalid at {key or 'the top'!r}: {message}") from None

    def add(self, result: BenchmarkResult, run_dir: Path | None) -> bool:
        """Record a result; returns False when an ingested log with the same sha256 exists."""
        value = result.throughput.value if result.throughput else None
        unit = result.throughput.unit if result.throughput else None
        with closing(self._connect()) as conn, conn, self._damage_reported():
            cursor = conn.execute(
                "INSERT OR IGNORE INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    result.run_id,
                    result.started_at.isoformat(),
                    result.case,
                    result.framework,
                    result.vendor,
                    result.status,
                    value,
                    unit,
                    result.config_hash,
                    result.source,
                    result.source_sha256,
                    str(run_dir) if run_dir else None,
                    result.model_dump_json(),
                ),
            )
            return cursor.rowcount == 1

    def list(self, *, case: str | list[str] | None = None, framework: str | list[str] | None = None,
             vendor: str | list[str] | None = None, status: str | list[str] | None = None,
             since: datetime | None = None, limit: int | None = 50) -> list[BenchmarkResult]:
        """Recorded results, newest first; each filter is a value or a list of values (empty:
        all), ``since`` keeps runs started at or after it, ``limit`` None means all."""
        clauses, args = [], []
        for column, value in (("case_name", case), ("framework", framework),
                              ("vendor", vendor), ("status", status)):
            values = [value] if isinstance(value, str) else list(value or [])
            if values:
                clauses.append(f"{column} IN ({','.join('?' * len(values))})")
                args.extend(values)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._read(f"SELECT result_json FROM runs {where} ORDER BY created_at DESC LIMIT ?",
                          (*args, -1 if limit is None or since is not None else limit))
        results = [self._result(row[0]) for row in rows]
        if since is not None:  # compared as datetimes: stored offsets may differ
            results = [r for r in results if r.started_at >= since][:limit]
        return results

    def get(self, run_id: str) -> BenchmarkResult | None:
        """A result by run id or unique run-id prefix (characters match literally: ``%`` and
        ``_`` are no wildcards, and an empty prefix matches nothing)."""
        if not run_id:
            return None
        exact = self._read("SELECT result_json FROM runs WHERE run_id = ?", (run_id,))
        if exact:
            return self._result(exact[0][0])
        escaped = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._read("SELECT result_json FROM runs WHERE run_id LIKE ? ESCAPE '\\' LIMIT 2",
                          (escaped + "%",))
        if len(rows) != 1:
            return None
        return self._result(rows[0][0])

    def find_by_config_hash(self, config_hash: str, status: str | None = "success") -> list[BenchmarkResult]:
        query = "SELECT result_json FROM runs WHERE config_hash = ?"
        args: list = [config_hash]
        if status:
            query += " AND status = ?"
            args.append(status)
        rows = self._read(query, args)
        return [self._result(r[0]) for r in rows]

    def run_dirs(self) -> dict[str, str | None]:
        """Run id -> run folder, for readers (reports) that also need a run's files."""
        return dict(self._read("SELECT run_id, run_dir FROM runs"))


def run_folder_damage(result: BenchmarkResult, run_dir: Path | str | None) -> str | None:
    """Why a recorded run's folder no longer holds its result (deleted, ``result.json``
    missing, truncated or another run's), else None. A run recorded without a folder has
    nothing to damage. Sweeps run such a point again; reports say which runs they lack."""
    if run_dir is None:
        return None
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return f"its run folder {run_dir} is missing"
    path = run_dir / "result.json"
    try:
        on_disk = BenchmarkResult.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"{path} is missing"
    except (OSError, ValueError, ValidationError):  # truncated, garbled, unreadable
        return f"{path} is damaged (not a readable result)"
    if on_disk.run_id != result.run_id or on_disk.config_hash != result.config_hash:
        return f"{path} holds another run ({on_disk.run_id})"
    return None
