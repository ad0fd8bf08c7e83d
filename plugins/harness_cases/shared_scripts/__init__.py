"""Framework-neutral modules the training scripts of several frameworks share.

Training scripts run in each framework's own interpreter (an isolated virtualenv for Paddle
and MXNet), where harness is not installed; framework plugins put this folder on the
scripts' ``PYTHONPATH`` (``SHARED_SCRIPTS_DIR``) and the scripts import its modules by name:

- ``gpt_windows``, ``bert_hdf5``, ``image_records``: readers of the cases' dataset formats
  (numpy and h5py only), which each script wraps in its framework's dataset class;
- ``gpt_dataset``: that wrapper for the GPT windows as a torch ``Dataset``, shared by the
  torch-based scripts (PyTorch and Megatron-core) so both read the same tokens in order;
- ``lr_schedule``: the cases' learning-rate schedule (standard library only);
- ``model_flops``: the cases' training FLOPs formulas (standard library only), which
  harness's MFU uses too;
- ``readback``: the read-back line every script prints before its first step (what it built
  and will run), which the core checks against the resolved config.
- ``device_backend``: the vendor's device backend as the scripts read it from the resolved
  config (standard library only).
- ``step_profile``: the diagnostics kernel profile of the steps named in
  ``HARNESS_PROFILE_STEPS`` (torch only), so frameworks are profiled alike.
"""

import os
from pathlib import Path

SHARED_SCRIPTS_DIR = Path(__file__).resolve().parent


def launch_scripts(entry: Path, *folders: Path) -> list[str]:
    """A launch's ``scripts``: the entry script first, then the modules of ``folders`` and of
    this folder it may import (the result records each file's sha256)."""
    modules = sorted({p for folder in (*folders, SHARED_SCRIPTS_DIR) for p in folder.glob("*.py")
                      if p.name != "__init__.py" and p != entry})
    return [str(entry), *map(str, modules)]


def run_matmul_probe(env, library: str, backend, precision: str, seconds: float = 1.5):
    """A built-in framework's ``matmul_probe``: ``matmul_probe.py --framework library`` run
    isolated in the run's interpreter (``env.python``) with the run's variables (``env.env``:
    the framework's, and the vendor's for one process, such as its threads), on the device the
    vendor's backend names for ``library`` (torch, paddle, mxnet); None (with a warning) when
    the backend has no such device or the probe fails."""
    import json
    import logging
    import subprocess

    from harness.models import MatmulRate

    entry = backend.for_framework(library) if backend is not None else None
    if entry is None:
        return None
    argv = [env.python, "-I", str(SHARED_SCRIPTS_DIR / "matmul_probe.py"), "--framework", library,
            "--device", entry.device_type, "--dtype", precision, "--seconds", str(seconds),
            "--fp32-precision", backend.float32_matmul_precision,
            *(a for module in entry.import_modules for a in ("--import", module))]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True,
                             stdin=subprocess.DEVNULL, env={**os.environ, **env.env})
        rate = json.loads(out.stdout.strip().splitlines()[-1])
        return MatmulRate(flops_per_s=rate["flops_per_s"], size=rate["n"], dtype=rate["dtype"],
                          device=rate["device"], framework_version=rate.get("version"),
                          clock=rate.get("clock"))
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, IndexError) as exc:
        detail = getattr(exc, "stderr", None) or exc
        logging.getLogger(__name__).warning("matmul probe failed: %s", str(detail).strip()[-300:])
        return None


def scripts_pythonpath(*folders: Path) -> str:
    """A launch's ``PYTHONPATH``: ``folders`` (a plugin's own script modules), then this folder,
    then the caller's ``PYTHONPATH``, whose packages stay visible behind them."""
    entries = [*map(str, folders), str(SHARED_SCRIPTS_DIR), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(filter(None, entries))
