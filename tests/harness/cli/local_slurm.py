"""A real Slurm cluster of one node on localhost for the slow Slurm tests: munged, slurmctld and
slurmd started as root with their state, sockets and logs in a temporary folder (Debian's
``slurm-wlm`` and ``munge``). Nothing of the machine's own configuration is used or changed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "sinfo")


def unavailable_reason() -> str | None:
    """Why a local Slurm cluster cannot be started here (None: it can)."""
    if os.geteuid() != 0:
        return "the local Slurm cluster runs its daemons as root; run the tests as root"
    missing = [name for name in DAEMONS
               if shutil.which(name) is None and not Path("/usr/sbin", name).exists()]
    if missing:
        return (f"Slurm/munge binaries missing ({', '.join(missing)}); install Debian's slurm-wlm "
                "and munge (scripts/test.sh does as root)")
    return None


def _binary(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LocalSlurm:
    folder: Path
    node: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.folder / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, SLURM_CONF=str(self.conf))

    def start(self, cpus: int = 2, timeout_s: float = 60) -> None:
        folder = self.folder
        for name in ("munge", "ctld", "spool", "log"):
            (folder / name).mkdir(parents=True, exist_ok=True)
            os.chmod(folder / name, 0o700)
        os.chmod(folder, 0o755)
        key = folder / "munge" / "munge.key"
        subprocess.run([_binary("mungekey"), "--create", f"--keyfile={key}"], check=True)
        socket_path = folder / "munge" / "munge.socket"
        subprocess.run([_binary("munged"), "--force", f"--socket={socket_path}",
                        f"--key-file={key}", f"--pid-file={folder / 'munge' / 'munged.pid'}",
                        f"--seed-file={folder / 'munge' / 'munged.seed'}",
                        f"--log-file={folder / 'log' / 'munged.log'}"], check=True)
        self.conf.write_text("\n".join([
            "ClusterName=harnesstest",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            f"AuthInfo=socket={socket_path}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={folder / 'ctld'}",
            f"SlurmdSpoolDir={folder / 'spool'}",
            f"SlurmctldPidFile={folder / 'ctld' / 'slurmctld.pid'}",
            f"SlurmdPidFile={folder / 'spool' / 'slurmd.pid'}",
            f"SlurmctldLogFile={folder / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={folder / 'log' / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "ReturnToService=2",
            "KillWait=10",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN",
            f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]))
        for daemon in ("slurmctld", "slurmd"):
            log = open(folder / "log" / f"{daemon}.stderr", "w")
            self.processes.append(subprocess.Popen(
                [_binary(daemon), "-D", "-f", str(self.conf)] + (["-c"] if daemon == "slurmctld" else []),
                env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%T", "-n", self.node], env=self.env,
                                   capture_output=True, text=True).stdout.strip()
            if state == "idle":
                return
            if any(p.poll() is not None for p in self.processes):
                break
            time.sleep(1)
        raise RuntimeError(f"local Slurm did not come up (node state {state!r}): "
                           + self.logs())

    def logs(self) -> str:
        parts = []
        for path in sorted((self.folder / "log").glob("*")):
            parts.append(f"--- {path.name}\n" + path.read_text(errors="replace")[-2000:])
        return "\n".join(parts)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        socket_path = self.folder / "munge" / "munge.socket"
        if socket_path.exists():
            subprocess.run([_binary("munged"), "--stop", f"--socket={socket_path}"],
                           capture_output=True)
