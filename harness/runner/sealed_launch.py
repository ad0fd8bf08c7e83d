"""The core's launch of a built-in framework's training script.

A built-in framework plugin says how its script runs (``run``); a vendor's ``run`` wrapper may
add only the environment variables its ``DeviceBackend`` declares (``allowed_launch_env``:
visible devices, threads, runtime knobs). Anything else it changes (the command, another
variable, the working folder) makes the run ``invalid``, naming what changed. The core then
starts the command itself (:func:`sealed_launch`):

- the interpreter runs isolated (``-I``) through ``script_bootstrap.py``, so no
  ``PYTHONPATH``, user site-packages or ``sitecustomize`` can replace a module the script
  imports; the script's folders (the framework's ``PYTHONPATH`` entries) go on ``sys.path``
  explicitly, harness's script folders first;
- the environment is assembled here, whole: harness's own minus the variables that change
  which code the interpreter or loader loads, plus the launch's variables;
- the bootstrap records the sha256 of every file the processes imported from harness's script
  folders, and any module named like one of theirs that was imported from elsewhere;
- the resolved config the script reads (``config.json``, written by the core) must be what the
  core wrote when the process is started and when it has ended (:func:`config_file_changes`).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path

from harness.models import LaunchSpec
from harness.models.device import UNDECLARABLE_ENV_PREFIXES
from harness.models.result import LaunchRecord
from harness.readback import DATA_NONCE_ENV
from harness.runner.scrub import scrub_environment

BOOTSTRAP = Path(__file__).with_name("script_bootstrap.py")
#: The resolved config a built-in script reads, in the run folder.
CONFIG_FILE = "config.json"
#: Changed keys named in a reason, at most.
_NAMED_KEYS = 5
#: The interpreter flags of the sealed launch: isolated, unbuffered (``-I`` ignores
#: PYTHONUNBUFFERED, and the core times the step lines as they arrive).
INTERPRETER_FLAGS = ["-I", "-u"]


def vendor_changes(framework: LaunchSpec, vendored: LaunchSpec, allowed_env: frozenset[str]) -> list[str]:
    """What a vendor's ``run`` wrapper changed in a built-in framework's launch beyond the
    variables it may set: empty when nothing."""
    changes: list[str] = []
    if vendored.argv != framework.argv:
        changes.append(f"replaced the command {_first_difference(framework.argv, vendored.argv)}")
    for name in sorted(set(framework.env) | set(vendored.env)):
        before, after = framework.env.get(name), vendored.env.get(name)
        if before == after or (name in allowed_env and after is not None):
            continue
        verb = "removed" if after is None else "changed" if before is not None else "set"
        changes.append(f"{verb} {name} (not a variable its device backend declares)"
                       if after is not None else f"{verb} {name}")
    for field in ("cwd", "nproc", "nnodes", "log_format", "scripts", "inherit_env"):
        if getattr(vendored, field) != getattr(framework, field):
            changes.append(f"changed the launch's {field}")
    return changes


def config_text(config) -> str:
    """The text of ``config.json`` as the core writes it for the training scripts."""
    return config.model_dump_json(indent=2) + "\n"


def config_file_changes(run_dir: Path, config) -> list[str]:
    """What differs in ``run_dir/config.json`` from the resolved config the core wrote there
    (``config_text``): empty when nothing; else one item naming the keys that differ
    (``params.num_layers 2 -> 1``). A script that reads an edited file trains another model
    than the one its result would record."""
    path = run_dir / CONFIG_FILE
    written = config_text(config)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return [f"removed {CONFIG_FILE}"]
    if text == written:
        return []
    try:
        now = _flat(json.loads(text))
    except ValueError:
        return [f"replaced {CONFIG_FILE} with a file that is not JSON"]
    before = _flat(json.loads(written))
    keys = sorted(k for k in before.keys() | now.keys() if before.get(k, _ABSENT) != now.get(k, _ABSENT))
    if not keys:
        return [f"rewrote {CONFIG_FILE} (the same values)"]
    named = [f"{k} {_shown(before.get(k, _ABSENT))} -> {_shown(now.get(k, _ABSENT))}" for k in keys[:_NAMED_KEYS]]
    more = f" and {len(keys) - _NAMED_KEYS} more" if len(keys) > _NAMED_KEYS else ""
    return [f"changed {CONFIG_FILE} ({', '.join(named)}{more})"]


def restore_config_file(run_dir: Path, config) -> None:
    """Put ``config.json`` back as the core wrote it: the run folder keeps the config its result
    records, and the change is named in the run's reason instead."""
    from harness.results_io import atomic_write_text

    atomic_write_text(run_dir / CONFIG_FILE, config_text(config))


_ABSENT = object()


def _flat(value, prefix: str = "") -> dict:
    if isinstance(value, dict) and value:
        flat: dict = {}
        for key, item in value.items():
            flat.update(_flat(item, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: value}


def _shown(value) -> str:
    return "(none)" if value is _ABSENT else json.dumps(value)


def _first_difference(before: list[str], after: list[str]) -> str:
    for index, (a, b) in enumerate(zip(before, after)):
        if a != b:
            return f"(argument {index}: {a!r} became {b!r})"
    return f"({len(before)} arguments became {len(after)})"


def training_environment(launch: LaunchSpec, inherited: dict[str, str] | None = None) -> dict[str, str]:
    """The training processes' whole environment: harness's own (``inherited``) and the
    launch's variables, without those that make Python or the loader load code from elsewhere."""
    base = dict(os.environ if inherited is None else inherited)
    env = {name: value for name, value in {**base, **launch.env}.items()
           if not name.upper().startswith(UNDECLARABLE_ENV_PREFIXES)}
    env["PYTHONNOUSERSITE"] = "1"  # a launcher's worker starts without -I until the bootstrap
    return env


def repeat_nonce(job_id: str | None, nnodes: int, repeat: int) -> int:
    """A repeat's data-order nonce (31 bits): fresh from the system's randomness on one node;
    on several, derived from the job id, which every node shares, so their data orders agree."""
    if nnodes > 1 and job_id:
        digest = hashlib.sha256(f"{job_id}:{repeat}".encode()).digest()
        return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
    return secrets.randbits(31)


def sealed_launch(launch: LaunchSpec, record_prefix: Path, data_nonce: int | None = None) -> LaunchSpec:
    """``launch`` as the core starts it: isolated interpreter, the bootstrap before the entry
    script (``launch.scripts[0]``; a launcher in front keeps its arguments), the whole
    environment with the repeat's ``data_nonce`` (when given), no ``PYTHONPATH``."""
    if not launch.scripts or launch.scripts[0] not in launch.argv[1:]:
        raise ValueError("a built-in framework's launch must run its entry script (scripts[0]) "
                         "as an argument of the interpreter")
    entry = launch.argv.index(launch.scripts[0], 1)
    script_folders = list(dict.fromkeys(str(Path(s).resolve().parent) for s in launch.scripts))
    paths = [p for p in launch.env.get("PYTHONPATH", "").split(os.pathsep) if p]
    bootstrap = [str(BOOTSTRAP), *(a for f in script_folders for a in ("--scripts", f)),
                 *(a for p in paths if p not in script_folders for a in ("--path", p)),
                 "--record", str(record_prefix), "--"]
    argv = [launch.argv[0], *INTERPRETER_FLAGS, *launch.argv[1:entry], *bootstrap, *launch.argv[entry:]]
    env = training_environment(launch)
    env.pop(DATA_NONCE_ENV, None)  # only the core's own
    if data_nonce is not None:
        env[DATA_NONCE_ENV] = str(data_nonce)
    return launch.model_copy(update={"argv": argv, "env": env, "inherit_env": False})


def read_import_records(record_prefix: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(imported file -> sha256, shadowed module -> file) over the records the bootstrap of
    each training process wrote at exit; the records are removed once read."""
    imported: dict[str, str] = {}
    shadowed: dict[str, str] = {}
    for path in sorted(record_prefix.parent.glob(f"{record_prefix.name}.*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            imported.update(record.get("imported", {}))
            shadowed.update(record.get("shadowed", {}))
        except (OSError, ValueError):
            continue
        finally:
            path.unlink(missing_ok=True)
    return imported, shadowed


def shadowed_problem(shadowed: dict[str, str]) -> str | None:
    """Why a repeat whose process imported a module named like a harness script from elsewhere
    is invalid, or None."""
    if not shadowed:
        return None
    named = ", ".join(f"{name} from {path}" for name, path in sorted(shadowed.items()))
    return f"the training process imported harness script modules from elsewhere: {named}"


def launch_record(repeat: int, launch: LaunchSpec, imported: dict[str, str]) -> LaunchRecord:
    from harness.provenance import display_path

    return LaunchRecord(repeat=repeat, argv=list(launch.argv), env=scrub_environment(launch.env),
                        imported={display_path(Path(p)): digest for p, digest in sorted(imported.items())})
