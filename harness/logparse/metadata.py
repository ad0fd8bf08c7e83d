"""Facts a log states about its run: world size, precision, batch size, sequence length.

Logs print them in their preambles in many dialects: DLLogger ``PARAMETER`` lines, Megatron's
argument dump (``fp16 ........ True``), gluon-cv's ``Namespace(num_gpus=8, ...)``, launcher
lines (``--nproc_per_node=8``, ``WORLD_SIZE=8``, ``mpirun -np 8``). The :class:`MetadataSniffer`
reads the first ``SNIFF_LINES`` lines of a log (a literal substring test gates each regex, so
the cost is negligible) and keeps, per fact, the first value found with the line it came from.
:func:`facts_from_file_name` reads the same facts from names such as
``PaddleNLP_gpt_bs8_fp16_N1C8_log`` or ``resnet50_8xA100_amp.log``.

Where a fact comes from is kept beside its value, so a result can say it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Lines of a log's beginning searched for stated facts (preambles; not the step lines).
SNIFF_LINES = 20_000


@dataclass(frozen=True)
class Fact:
    value: int | str
    source: str  # e.g. "log line 3: num_gpus=8", "file name: N1C8"


_GPUS = [
    re.compile(r"\bnum_gpus\s*[=:]\s*(\d+)"),
    re.compile(r"\bworld_size\b\s*[.:=]*\s*(\d+)", re.IGNORECASE),
    re.compile(r"\b(?:OMPI_COMM_WORLD_SIZE|PADDLE_TRAINERS_NUM|SLURM_NTASKS)\s*[=:]\s*(\d+)"),
    re.compile(r"Total batch size is set to \d+ on (\d+) GPUs"),
    re.compile(r"\bmpirun\b.*?\s-(?:np|n)\s+(\d+)"),
]
_GPU_LIST = re.compile(r"\bgpus\s*[:=]\s*\[([\d,\s]+)\]")
_NPROC = re.compile(r"nproc_per_node[=\s]+(\d+)")
_NNODES = re.compile(r"\bnnodes[=\s]+(\d+)")
_FLAG_PRECISION = re.compile(
    r"\b(use_amp|amp|fp16|use_fp16|use_pure_fp16|enable_amp|bf16|use_bf16)\b['\"]?\s*(?:[:=]|\.{2,})\s*['\"]?(True|true)\b")
_DTYPE = re.compile(r"\b(?:dtype|precision|amp_dtype)\b['\"]?\s*[:=]\s*['\"]?(float16|bfloat16|float32|fp16|bf16|fp32|tf32|amp)\b")
_BATCH = [
    re.compile(r"\b(?:micro_batch_size|batch_size_per_gpu|per_device_train_batch_size|local_batch_size)\b['\"]?\s*[.:=]*\s*(\d+)"),
    re.compile(r"\bbatch_size\b['\"]?\s*[:=]\s*(\d+)"),
    re.compile(r"\bbatch_size\s\.{2,}\s*(\d+)"),
]
_GLOBAL_BATCH = re.compile(r"\bglobal_batch_size\b['\"]?\s*[.:=]*\s*(\d+)")
_SEQ = re.compile(
    r"\b(?:seq_length|max_seq_length|seq_len|max_seq_len|sequence_length|encoder_seq_length)\b['\"]?"
    r"\s*[.:=]*\s*(\d+)")
_PRECISION_WORDS = {"float16": "fp16", "fp16": "fp16", "amp": "fp16", "bfloat16": "bf16", "bf16": "bf16",
                    "float32": "fp32", "fp32": "fp32", "tf32": "fp32"}


def _snippet(line: str, match: re.Match) -> str:
    return line[max(0, match.start() - 10):match.end() + 10].strip()[:80]


class MetadataSniffer:
    """Fed the first lines of a log; ``found`` maps fact name -> :class:`Fact`."""

    def __init__(self) -> None:
        self.found: dict[str, Fact] = {}
        self._nproc: Fact | None = None
        self._nnodes: Fact | None = None

    def _keep(self, key: str, value, number: int, line: str, match: re.Match) -> None:
        if key not in self.found:
            self.found[key] = Fact(value, f"log line {number}: {_snippet(line, match)}")

    def feed(self, line: str, number: int) -> None:
        found = self.found
        if len(line) > 20_000:
            line = line[:20_000]  # a megabyte-long tqdm line cannot hide a preamble fact
        if "gpu" in line or "GPU" in line or "size" in line or "SIZE" in line or "NUM" in line \
                or "mpirun" in line or "nproc" in line or "nnodes" in line or "NTASKS" in line:
            if "gpus" not in found:
                for pattern in _GPUS:
                    match = pattern.search(line)
                    if match and int(match.group(1)) > 0:
                        self._keep("gpus", int(match.group(1)), number, line, match)
                        break
                else:
                    listed = _GPU_LIST.search(line) if "gpus" in line else None
                    if listed:
                        count = len([g for g in listed.group(1).split(",") if g.strip()])
                        if count:
                            self._keep("gpus", count, number, line, listed)
            if "nproc_per_node" in line and self._nproc is None:
                match = _NPROC.search(line)
                if match:
                    self._nproc = Fact(int(match.group(1)), f"log line {number}: {_snippet(line, match)}")
            if "nnodes" in line and self._nnodes is None:
                match = _NNODES.search(line)
                if match:
                    self._nnodes = Fact(int(match.group(1)), f"log line {number}: {_snippet(line, match)}")
        if "precision" not in found and ("16" in line or "amp" in line or "dtype" in line
                                         or "precision" in line or "32" in line):
            match = _FLAG_PRECISION.search(line)
            if match:
                self._keep("precision", "bf16" if "bf16" in match.group(1) else "fp16", number, line, match)
            else:
                match = _DTYPE.search(line)
                if match:
                    self._keep("precision", _PRECISION_WORDS[match.group(1)], number, line, match)
        if "batch" in line:
            if "batch_size" not in found:
                for pattern in _BATCH:
                    match = pattern.search(line)
                    if match and int(match.group(1)) > 0:
                        self._keep("batch_size", int(match.group(1)), number, line, match)
                        break
            if "global_batch_size" not in found:
                match = _GLOBAL_BATCH.search(line)
                if match and int(match.group(1)) > 0:
                    self._keep("global_batch_size", int(match.group(1)), number, line, match)
        if "seq" in line and "seq_len" not in found:
            match = _SEQ.search(line)
            if match and int(match.group(1)) > 0:
                self._keep("seq_len", int(match.group(1)), number, line, match)

    @property
    def facts(self) -> dict[str, Fact]:
        facts = dict(self.found)
        if "gpus" not in facts and self._nproc is not None:
            nodes = self._nnodes.value if self._nnodes is not None else 1
            source = self._nproc.source + (f"; {self._nnodes.source}" if self._nnodes else "")
            facts["gpus"] = Fact(int(self._nproc.value) * int(nodes), source)
        return facts


_NODES_CARDS = re.compile(r"(?:^|[^A-Za-z0-9])N(\d+)C(\d+)(?:[^A-Za-z0-9]|$)")
_GPU_IN_NAME = re.compile(r"(?:^|[^A-Za-z0-9])(?:gpus?(\d+)|(\d+)gpus?|(\d+)x[A-Za-z]+\d+)(?:[^A-Za-z0-9]|$)",
                          re.IGNORECASE)
_BS_IN_NAME = re.compile(r"(?:^|[^A-Za-z0-9])bs(\d+)(?:[^A-Za-z0-9]|$)", re.IGNORECASE)
_SEQ_IN_NAME = re.compile(r"(?:^|[^A-Za-z0-9])seq(?:len)?(\d+)(?:[^A-Za-z0-9]|$)", re.IGNORECASE)
_PRECISION_IN_NAME = re.compile(r"(?:^|[^A-Za-z0-9])(bf16|fp16|amp|fp32|tf32|half)(?:[^A-Za-z0-9]|$)",
                                re.IGNORECASE)


def facts_from_file_name(name: str) -> dict[str, Fact]:
    """GPU count (``N1C8``, ``gpu8``, ``8gpus``, ``8xA100``), batch (``bs96``), precision and
    sequence length (``seq128``) stated by a log's file name."""
    facts: dict[str, Fact] = {}
    match = _NODES_CARDS.search(name)
    if match:
        facts["gpus"] = Fact(int(match.group(1)) * int(match.group(2)), f"file name: N{match.group(1)}C{match.group(2)}")
    else:
        match = _GPU_IN_NAME.search(name)
        if match:
            count = int(next(g for g in match.groups() if g))
            if count:
                facts["gpus"] = Fact(count, f"file name: {match.group(0).strip('_-.')}")
    match = _BS_IN_NAME.search(name)
    if match:
        facts["batch_size"] = Fact(int(match.group(1)), f"file name: bs{match.group(1)}")
    match = _SEQ_IN_NAME.search(name)
    if match:
        facts["seq_len"] = Fact(int(match.group(1)), f"file name: {match.group(0).strip('_-.')}")
    match = _PRECISION_IN_NAME.search(name)
    if match:
        word = match.group(1).lower()
        facts["precision"] = Fact({"half": "fp16", "amp": "fp16", "tf32": "fp32"}.get(word, word),
                                  f"file name: {match.group(1)}")
    return facts
