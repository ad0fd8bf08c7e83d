"""The uniform result schema, and the legacy index JSON the benchmark repos use."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.models.config import ResolvedConfig
from harness.models.device import DeviceSet
from harness.models.efficiency import Efficiency
from harness.models.health import Health
from harness.models.memory import MemoryEstimate
from harness.models.launch import DatasetInfo, EnvRequirements, RunStatus, Wheelhouse
from harness.witness import Witness

#: 2.0: ``micro_batch_size`` is stored once, in ``config.settings`` (the top-level copy of 1.x
#: results is dropped when they are read; ``BenchmarkResult.micro_batch_size`` reads it).
#: 2.1 added ``health``.
#: 2.2: ``environment.requirements`` and ``environment.wheelhouse`` (where an isolated
#: environment came from) and ``config.settings.framework_requirement``.
#: 2.3: ``health.peak_learning_rate`` (the below-uniform rule waits for the warm-up).
SCHEMA_VERSION = "2.3"

#: ``config.sources["micro_batch_size"]`` of an ingested log that does not say its batch size
#: (the config holds 1 in its place; ``BenchmarkResult.micro_batch_size`` is then 0).
BATCH_NOT_IN_LOG = "not in the log"


def micro_batch_of(config: ResolvedConfig) -> int:
    """A config's per-process batch size; 0 where it stands in for one a log did not say."""
    if config.sources.get("micro_batch_size") == BATCH_NOT_IN_LOG:
        return 0
    return config.settings.micro_batch_size


class StepTimeStats(BaseModel):
    """Step-time statistics over the measured (post warm-up) steps, in seconds."""

    n: int
    mean: float
    median: float
    p5: float
    p95: float
    cv: float = Field(description="Coefficient of variation: stdev / mean.")


class OtherFigure(BaseModel):
    """A second figure the same log yields, named so the two are never confused."""

    value: float
    method: str = Field(description="How it follows from the log (the method and its rule).")
    field: str | None = Field(None, description="The log field, for a figure the framework printed.")


class Throughput(BaseModel):
    value: float = Field(description="FINAL_RESULT: mean throughput after skipping warm-up steps.")
    unit: str
    per_device: float
    median: float | None = Field(None, description="Median of per-step throughput.")
    method: str = Field("mean-after-warmup", description="Aggregation method that produced value.")
    records_used: int | None = Field(
        None, description="Logged records (steps, intervals or epochs) the value rests on.")
    first_step_used: int | None = Field(None, description="First iteration covered by the records used.")
    last_step_used: int | None = Field(None, description="Last iteration covered by the records used.")
    field: str | None = Field(
        None, description="For a figure the framework printed: the log field it was taken from.")
    scope: str | None = Field(
        None, description="How the log's figures were read: 'per-gpu' (multiplied by the GPU count) "
                          "or 'global' (the job's total as printed).")
    samples_from: str | None = Field(
        None, description="Where the samples behind the records used were read (e.g. 'block samples_count', "
                          "'run_stop samples_count', 'train_samples at the end'): counts the run reached, "
                          "not its configuration.")
    other: OtherFigure | None = Field(
        None, description="The log's other figure, shown beside value: the framework's printed figure "
                          "when value is harness's, or harness's when value is the framework's.")
    total_work: float | None = Field(
        None, description="Total-work figure: units (tokens, samples) processed in the measured "
                          "steps over their wall time, sum(rate*time)/sum(time). FINAL_RESULT "
                          "(value) is the mean of the per-step rates, the seeds' convention.")


class RepeatResult(BaseModel):
    """One repeat of a run (``--repeat N`` runs the same config N times)."""

    index: int
    status: RunStatus
    final_result: float | None
    step_time: StepTimeStats | None = None
    log_file: str
    log_format: str | None = Field(None, description="Log format the launch printed (reports re-read the log with it).")
    duration_s: float
    data_nonce: int | None = Field(
        None, description="The nonce the harness gave this repeat to seed its data order "
                          "(HARNESS_DATA_NONCE), which the read-back must report; None for "
                          "other frameworks' scripts and equivalence runs.")
    witness: Witness | None = Field(
        None, description="What the harness itself saw of the repeat's output: its sha256 as "
                          "captured, the step records that arrived and the rate their arrival "
                          "times give (None: an ingested log, which the harness did not see arrive).")


class LogSummary(BaseModel):
    """What was read from the training log: curves are thinned to at most 512 points."""

    format: str
    lines: int | None = Field(None, description="Lines read (ingested logs).")
    steps_parsed: int
    first_step: int | None = None
    last_step: int | None = None
    framework_reported: float | None = Field(None, description="Final figure the framework printed.")
    loss_curve: list[tuple[int, float | None]] = Field(
        default_factory=list, description="(step, loss) pairs; a NaN or infinite loss is null.")
    learning_rate_curve: list[tuple[int, float]] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict, description="Batch size, GPU count, ... from the log.")
    notes: list[str] = Field(default_factory=list)
    sources: dict[str, str] = Field(
        default_factory=dict,
        description="Where GPU count, precision, batch size and sequence length came from: a "
                    "command-line flag, a log line (quoted), the file name, or a default.")
    truncated: bool = Field(False, description="The log ends mid-line or lacks its format's end-of-run marker.")


class NodeRecord(BaseModel):
    """One node of a multi-node job: how its processes ended and a digest of its log. Nodes
    other than node 0 write it as ``node.json`` and send it to node 0, whose result lists them."""

    job_id: str
    job_run_id: str = Field(description="The run id of the job's result (node 0's run folder).")
    node_rank: int = Field(ge=0)
    nnodes: int = Field(ge=1)
    host: str = Field(description="The node's host name, scrubbed (``<host>``).")
    host_digest: str | None = Field(
        None, description="First 12 hex digits of the sha256 of the host name: tells nodes apart "
                          "without naming them.")
    status: RunStatus | Literal["missing"] = Field(
        description="How the node's launch ended; 'missing': no record reached node 0 in time.")
    exit_code: int | None = None
    reason: str | None = Field(None, description="Why the node failed, naming failed ranks when the "
                                                 "launcher's log says which.")
    failed_ranks: list[str] = Field(default_factory=list, description=(
        "Processes that failed on this node, as the launcher reported them, e.g. "
        "'rank 1 (local rank 0): killed by SIGKILL (out of memory?)'."))
    log_file: str | None = None
    log_sha256: str | None = None


class EnvironmentFingerprint(BaseModel):
    harness_version: str
    harness_git_sha: str | None = Field(
        None, description="Commit of the harness checkout that ran it (suffix -dirty for local "
                          "changes); None when harness is not run from a git checkout.")
    framework_build: str | None = Field(
        None, description="Build tag of the framework: the local label of its version "
                          "(cu128 in 2.8.0+cu128), None when the version has none.")
    python: str
    platform: str
    cpu: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    isolated_env: bool = False
    requirements: EnvRequirements
    wheelhouse: Wheelhouse


class PluginRecord(BaseModel):
    """A plugin that was loaded for a run."""

    name: str = Field(description="Plugin name (module or entry-point name).")
    distribution: str = Field(description="The pip distribution it comes from.")
    version: str = Field(description="Version of that distribution.")
    builtin: bool = Field(description="True for the plugins harness ships.")
    hooks: dict[str, Literal["implemented", "wrapped"]] = Field(
        default_factory=dict,
        description="Hooks of this run the plugin answered ('implemented') or wrapped "
                    "('wrapped'), as the core routed them; empty when it took no part.")


class LaunchRecord(BaseModel):
    """How the core started one repeat of a built-in framework's script."""

    repeat: int = Field(description="The repeat (1-based).")
    argv: list[str] = Field(description="The command exactly as the core started it.")
    env: dict[str, str] = Field(
        description="The training processes' whole environment, secrets and machine identity "
                    "scrubbed (values of variables named like a token, key or password: <redacted>).")
    imported: dict[str, str] = Field(
        default_factory=dict,
        description="Every file the training processes imported from harness's script folders "
                    "(path from its top-level package) -> sha256, as the core's bootstrap "
                    "recorded it when the processes exited.")


class Provenance(BaseModel):
    """What produced a result: the plugins and the exact files that ran."""

    plugins: list[PluginRecord] = Field(default_factory=list, description="Every loaded plugin.")
    scripts: dict[str, str] = Field(
        default_factory=dict, description="Training scripts the launch declared -> sha256.")
    launches: list[LaunchRecord] = Field(
        default_factory=list, description="The core's launch of each repeat of a built-in "
                                          "framework's script (empty for other frameworks).")
    vendor_config: str | None = Field(None, description="The vendor config file applied, if any.")
    vendor_config_sha256: str | None = None


class BenchmarkResult(BaseModel):
    """One benchmark run. ``schemas/result.schema.json`` is generated from this model."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = SCHEMA_VERSION
    run_id: str
    source: Literal["harness", "ingested"] = "harness"
    source_sha256: str | None = Field(None, description="sha256 of an ingested log file.")
    case: str
    model: str
    framework: str
    framework_version: str | None
    vendor: str
    devices: DeviceSet | None
    nnodes: int
    nproc: int
    run_mode: Literal["sp", "mp"]
    precision: str
    global_batch_size: int
    max_steps: int
    steps_completed: int
    skip_steps: int
    throughput: Throughput | None
    step_time: StepTimeStats | None
    loss_first: float | None
    loss_final: float | None
    time_to_train_min: float | None = Field(
        None, description="MLPerf time to train: run_start to run_stop, in minutes.")
    warnings: list[str] = Field(
        default_factory=list, description="Reasons to doubt the figure: few records, a truncated log, ...")
    peak_memory_bytes: int | None = Field(None, description="Framework-reported peak memory.")
    memory_estimate: MemoryEstimate | None = Field(
        None, description="The memory planner's per-device estimate of that peak, made before launch."
    )
    efficiency: Efficiency | None = Field(
        None, description="MFU and energy per unit, computed from the model's FLOPs formula, "
                          "the vendor's peak table and the vendor's power readings.")
    log_summary: LogSummary | None = Field(None, description="Curves and facts read from the log.")
    health: Health | None = Field(
        None, description="Whether the training was healthy, judged on the loss curve "
                          "(harness/health.py): finite, no spike above the first loss, below the "
                          "uniform-guess loss after the first steps, falling over the window. "
                          "None in results recorded before schema 1.1.")
    device_metrics: dict[str, Any] = Field(
        default_factory=dict, description="Vendor measurements: NVML peak memory, power, energy."
    )
    repeats: list[RepeatResult] = Field(default_factory=list)
    job_id: str | None = Field(None, description="Multi-node jobs: the id every node shared.")
    nodes: list[NodeRecord] = Field(
        default_factory=list, description="Multi-node jobs: every node's record (node 0's own first).")
    status: RunStatus
    failure_reason: str | None = None
    modified: list[str] = Field(
        default_factory=list,
        description="Measurement-window keys (steps, warm-up, learning rate and schedule, "
                    "dataset, seed) set on the command line or in a sweep file (config.sources "
                    "says which): the figure is not the case's own.")
    readback: dict[str, Any] | None = Field(
        None, description="What the training script said it built and ran (its read-back line).")
    provenance: Provenance | None = Field(
        None, description="Loaded plugins, the hooks each took part in, script and vendor-config sha256.")
    config_hash: str
    config: ResolvedConfig
    dataset: DatasetInfo | None = None
    environment: EnvironmentFingerprint
    started_at: datetime
    finished_at: datetime
    log_file: str = Field(description="Log of the first repeat, relative to the run folder.")

    @model_validator(mode="before")
    @classmethod
    def _from_1x(cls, data: Any) -> Any:
        """A 1.x result (``micro_batch_size`` at the top level as well as in the config) reads
        as 2.0; where an ingested log's top-level 0 said the batch was unknown, the config says
        so."""
        if isinstance(data, dict) and "micro_batch_size" in data:
            data = dict(data)
            batch = data.pop("micro_batch_size")
            config = data.get("config")
            if batch == 0 and isinstance(config, dict):
                config = {**config, "sources": {**config.get("sources", {}),
                                                "micro_batch_size": BATCH_NOT_IN_LOG}}
                data["config"] = config
            data["schema_version"] = SCHEMA_VERSION
        return data

    @property
    def micro_batch_size(self) -> int:
        """The per-process batch size (the config's); 0 where an ingested log did not say."""
        return micro_batch_of(self.config)

    @property
    def job_failed(self) -> bool:
        return self.status != "success"


class LegacyIndex(BaseModel):
    """The index JSON of PaddlePaddle/benchmark: exactly these ten keys."""

    model_config = ConfigDict(extra="forbid")

    log_file: str
    model_name: str
    mission_name: str
    direction_id: int
    run_mode: Literal["sp", "mp"]
    index: int = 1
    gpu_num: int
    FINAL_RESULT: float
    JOB_FAIL_FLAG: Literal[0, 1]
    UNIT: str
