"""``harness env``: build, list and remove the isolated framework environments of prepare_env."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.cli.options import SetOption, WheelhouseOption
from harness.cli.state import app_state
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


group = typer.Typer(help="Build, list and remove the isolated framework environments.",
                    no_args_is_help=True)


@group.command("build")
def build_command(
    ctx: typer.Context,
    case: Annotated[str, typer.Option(
        help="The case whose run the environment is for (its vendor config applies).")],
    vendor: Annotated[str, typer.Option(help="Vendor plugin: cpu, nvidia, ...")] = "cpu",
    framework: Annotated[Optional[str], typer.Option(
        help="Framework plugin; default: pytorch where it implements the case.")] = None,
    nproc: Annotated[Optional[int], typer.Option(
        min=1, help="Processes per node of the run (picks the vendor config, as run does).")] = None,
    nnodes: Annotated[Optional[int], typer.Option(min=1, help="Nodes of the run.")] = None,
    hardware_config: Annotated[Optional[str], typer.Option(
        help="Vendor per-case config by name, e.g. config_TP1PP1SH2SP8A10080Gx1x8.")] = None,
    set_: SetOption = None,
    wheelhouse: WheelhouseOption = None,
) -> None:
    """Build (or find) the environment `harness run` would use with these options, without
    running anything: e.g. offline from a wheelhouse, with --set framework_requirement=..."""
    from harness.runner.environment import prepare_run_environment
    from harness.runner.request import RunRequest

    request = RunRequest(case=case, vendor=vendor, framework=framework, nproc=nproc,
                         nnodes=nnodes, hardware_config=hardware_config,
                         set_pairs=list(set_ or []), wheelhouse=wheelhouse)
    env = prepare_run_environment(app_state(ctx).harness(), request)
    if not env.isolated:
        typer.echo(f"{env.framework} runs in the {env.description or 'current interpreter'} "
                   f"({env.python}); there is no environment to build")
        return
    version = f" {env.framework_version}" if env.framework_version else ""
    typer.echo(f"{env.framework}{version}: {env.description}")
    typer.echo(f"python: {env.python}")
    typer.echo(f"requirements: {' '.join(env.requirements)}")
    typer.echo(f"wheels from: {env.wheelhouse or 'the package indexes'}")


@group.command("list")
def list_command(cache_dir: CacheDir = None) -> None:
    """Cached environments: name, Python, key packages, size, last use."""
    from rich.console import Console
    from rich.table import Table

    from harness.envs import EnvStore, default_envs_root
    from harness.envs.store import folder_size

    root = default_envs_root(cache_dir)
    envs = EnvStore(root).list()
    table = Table("python", "requirements", "wheels from", "size", "last used", "state")
    table.add_column("environment", overflow="fold")  # the folder name: never cut
    for env in envs:
        record = env.record
        table.add_row(
            record.python_version if record else "-",
            " ".join(record.requirements) if record else "-",
            (record.wheelhouse or "indexes") if record else "-",
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
