"""``harness env``: the isolated framework environments cached by prepare_env."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.errors import UserInputError

CacheDir = Annotated[Optional[Path], typer.Option(
    "--cache-dir", help="Cache root holding envs/ (default: $HARNESS_CACHE_DIR or ~/.cache/harness).")]


def _human_size(num: int) -> str:
    size = float(num)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


group = typer.Typer(help="List and remove the isolated framework environments.",
                    no_args_is_help=True)


@group.command("list")
def list_command(cache_dir: CacheDir = None) -> None:
    """Cached environments: name, Python, key packages, size, last use."""
    from rich.console import Console
    from rich.table import Table

    from harness.envs import EnvStore, default_envs_root
    from harness.envs.store import folder_size

    root = default_envs_root(cache_dir)
    envs = EnvStore(root).list()
    table = Table("python", "requirements", "size", "last used", "state")
    table.add_column("environment", overflow="fold")  # the folder name: never cut
    for env in envs:
        record = env.record
        table.add_row(
            record.python_version if record else "-",
            " ".join(record.requirements) if record else "-",
            _human_size(folder_size(env.folder)),
            f"{record.last_used_at:%Y-%m-%d %H:%M}" if record else "-",
            "ready" if env.complete else "incomplete (prune removes it)",
            env.folder.name,
        )
    Console().print(table)
    typer.echo(f"{len(envs)} environment(s) in {root}", err=True)


@group.command("prune")
def prune_command(
    names: Annotated[Optional[list[str]], typer.Argument(
        help="Environments to remove: folder names or unique prefixes (see `harness env list`).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Remove every cached environment.")] = False,
    unused_days: Annotated[Optional[float], typer.Option(
        min=0, help="Remove environments not used for this many days.")] = None,
    dry_run: Annotated[bool, typer.Option(help="Only say what would be removed.")] = False,
    cache_dir: CacheDir = None,
) -> None:
    """Remove environments. Incomplete builds are always removed; a folder is rebuilt on next use."""
    from harness.envs import EnvStore, default_envs_root

    store = EnvStore(default_envs_root(cache_dir))
    envs = store.list()
    chosen = [env for env in envs if not env.complete]
    if all_:
        chosen = envs
    if unused_days is not None:
        cutoff = datetime.now(timezone.utc) - timedelta(days=unused_days)
        chosen += [e for e in envs if e.complete and e.record.last_used_at < cutoff]
    for name in names or []:
        matches = [e for e in envs if e.folder.name.startswith(name)]
        if len(matches) != 1:
            known = ", ".join(e.folder.name for e in envs) or "none"
            raise UserInputError(
                f"{name!r} matches {len(matches)} environments; give a unique prefix. Cached: {known}")
        chosen += matches
    unique = {e.folder: e for e in chosen}
    for env in list(unique.values()):
        if store.being_built(env):  # a concurrent run is installing it right now
            typer.echo(f"skipping {env.folder} (being built)")
            del unique[env.folder]
    for env in unique.values():
        typer.echo(("would remove " if dry_run else "removing ") + str(env.folder))
        if not dry_run:
            store.remove(env)
    if not unique:
        typer.echo("nothing to remove", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="env")
