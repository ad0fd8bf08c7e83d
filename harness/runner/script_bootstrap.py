"""Starts a built-in training script in an isolated interpreter (the core's launch of it).

Run by path as ``python -I -u script_bootstrap.py [--scripts DIR]... [--path DIR]...
[--record PREFIX] -- SCRIPT ARGS...``. It imports nothing from harness (the Paddle and MXNet
interpreters have no harness installed), only the standard library.

- ``-I``: no ``PYTHONPATH``, user site-packages or ``sitecustomize`` from either can replace a
  module the script imports. A framework's launcher (torchrun, paddle.distributed.launch)
  starts its workers as ``python -u script_bootstrap.py ...`` without ``-I``: the bootstrap
  then starts itself again isolated before anything of the script runs.
- The script's folders (``--scripts``: harness's script folders, then ``--path``: other folders
  the framework named) go in front of ``sys.path`` explicitly, after the script's own folder.
- At exit (also through ``os._exit``), ``PREFIX.<pid>.json`` records the sha256 of every file the process imported from the
  ``--scripts`` folders, and any module named like one of theirs that came from elsewhere.
"""

import atexit
import hashlib
import json
import os
import runpy
import sys

if not sys.flags.isolated:  # a launcher's worker: what ran so far is discarded by exec
    os.execv(sys.executable, [sys.executable, "-I", "-u", os.path.abspath(__file__), *sys.argv[1:]])


def _arguments(argv):
    scripts, paths, record = [], [], None
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] not in ("--scripts", "--path", "--record") or i + 1 >= len(argv):
            sys.exit(f"script_bootstrap: unexpected argument {argv[i]!r}")
        value = argv[i + 1]
        if argv[i] == "--scripts":
            scripts.append(os.path.realpath(value))
        elif argv[i] == "--path":
            paths.append(value)
        else:
            record = value
        i += 2
    if i + 1 >= len(argv):
        sys.exit("script_bootstrap: no script after --")
    return scripts, paths, record, argv[i + 1:]


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _inside(path, folders):
    return any(os.path.dirname(path) == folder for folder in folders)


def _write_record(prefix, script, folders):
    imported, shadowed = {script: _sha256(script)}, {}
    names = {name[:-3] for folder in folders for name in os.listdir(folder) if name.endswith(".py")}
    for name, module in list(sys.modules.items()):
        source = getattr(module, "__file__", None)
        if not source:
            continue
        source = os.path.realpath(source)
        if _inside(source, folders) and os.path.isfile(source):
            imported[source] = _sha256(source)
        elif name in names:
            shadowed[name] = source
    with open(f"{prefix}.{os.getpid()}.json", "w", encoding="utf-8") as handle:
        json.dump({"imported": imported, "shadowed": shadowed}, handle, indent=1, sort_keys=True)


def _record_at_exit(prefix, script, folders):
    """Write the record once as this process exits: normally (atexit) or through ``os._exit``,
    which the scripts use to skip the interpreter's teardown; not in forked children (data
    loader workers), which inherit the modules."""
    pid, real_exit = os.getpid(), os._exit

    def write():
        if os.getpid() == pid and not getattr(write, "done", False):
            write.done = True
            _write_record(prefix, script, folders)

    def exit_recorded(code):
        try:
            write()
        finally:
            real_exit(code)

    atexit.register(write)
    os._exit = exit_recorded


def main():
    scripts, paths, record, argv = _arguments(sys.argv[1:])
    script = os.path.realpath(argv[0])
    front = []
    for entry in (os.path.dirname(script), *scripts, *paths):
        if entry not in front:
            front.append(entry)
    sys.path[:0] = front
    if record:
        _record_at_exit(record, script, [os.path.dirname(script), *scripts])
    sys.argv = argv
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
