"""Run folders: atomic writes of result.json, config.json and the legacy index JSON."""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from harness.models import BenchmarkResult, CaseSpec, LegacyIndex


#: Decimals of FINAL_RESULT in the legacy index JSON (verifiers compare with this rounding).
LEGACY_DECIMALS = 3

def new_run_id(case: str, framework: str, vendor: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{case}-{framework}-{vendor}-{secrets.token_hex(2)}"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes the file 0600; a result file follows the umask like any other file
        # (train.log), so shared results folders and served reports stay readable.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def legacy_model_name(result: BenchmarkResult, case: CaseSpec) -> str:
    """``repoName_model_bs{bs}_{fp}``, e.g. ``nlp_gpt3_6.7B_bs8_fp32`` (the seeds' rule)."""
    return f"{case.legacy_prefix}_{result.case}_bs{result.micro_batch_size}_{result.precision}"


def legacy_file_name(result: BenchmarkResult, case: CaseSpec) -> str:
    """``<model>_<run_mode>_bs<bs>_<fp>_<gpus>_speed``."""
    gpus = result.nproc * result.nnodes
    return (
        f"{case.legacy_prefix}_{result.case}_{result.run_mode}_bs{result.micro_batch_size}"
        f"_{result.precision}_{gpus}_speed"
    )


def legacy_index(result: BenchmarkResult, case: CaseSpec, log_file: str) -> LegacyIndex:
    failed = result.job_failed or result.throughput is None
    return LegacyIndex(
        log_file=log_file,
        model_name=legacy_model_name(result, case),
        mission_name=case.mission_name,
        direction_id=case.direction_id,
        run_mode=result.run_mode,
        index=1,
        gpu_num=result.nproc * result.nnodes,
        FINAL_RESULT=0.0 if failed or result.throughput is None else round(result.throughput.value, LEGACY_DECIMALS),
        JOB_FAIL_FLAG=1 if failed else 0,
        UNIT=case.unit,
    )


def write_run_files(run_dir: Path, result: BenchmarkResult, case: CaseSpec) -> Path:
    """Write result.json and index/<legacy name>; returns the legacy file's path."""
    atomic_write_text(run_dir / "result.json", result.model_dump_json(indent=2) + "\n")
    index = legacy_index(result, case, log_file=f"{run_dir.name}/{result.log_file}")
    legacy_path = run_dir / "index" / legacy_file_name(result, case)
    atomic_write_text(legacy_path, json.dumps(index.model_dump(), ensure_ascii=False, indent=1) + "\n")
    return legacy_path
