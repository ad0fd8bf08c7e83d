"""Remove machine identity (IP addresses, host names) from archived logs.

The seeds require that archived logs carry no machine IPs; host names go too.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from functools import lru_cache

# An IPv4 address not glued to other digits/dots (so versions like 2.11.0 stay intact).
_IPV4 = re.compile(
    r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\d.]*\d)"
)
# IPv6 candidates: hex groups with at least two colons; ipaddress decides (so 12:30:45 stays).
_IPV6_CANDIDATE = re.compile(r"(?<![\w:])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])")


@lru_cache(maxsize=1)
def _host_names() -> tuple[str, ...]:
    names = {socket.gethostname()}
    try:
        names.add(socket.getfqdn())
    except OSError:
        pass
    # Longest first so that an fqdn is replaced before its short host name.
    return tuple(sorted((n for n in names if n and n not in ("localhost",)), key=len, reverse=True))


# Words the log formats read (iteration lines, DLLogger keys). A machine named like one of
# them is not scrubbed: replacing the word would make the log unreadable, and the word alone
# says nothing about the machine.
LOG_WORDS = frozenset({
    "iteration", "iterations", "step", "steps", "epoch", "loss", "lm", "lr", "learning", "rate",
    "time", "elapsed", "consumed", "samples", "tokens", "global", "batch", "size", "throughput",
    "memory", "grad", "norm", "train", "training", "eval", "ips", "speed", "avg", "rank", "node",
    "nan", "skipped", "number", "of", "per", "ms", "s", "sec", "loss_scale", "reader_cost",
    "batch_cost", "max_memory_allocated", "dllogger", "event", "data", "info", "warning", "error",
})


@lru_cache(maxsize=64)
def _host_pattern(names: tuple[str, ...]) -> re.Pattern | None:
    """Whole host-name tokens: not inside a longer name (``vm`` in ``vmstat``), and not a
    name followed by more of a domain (``gpu-17`` in ``gpu-17.cluster``, replaced whole)."""
    names = tuple(n for n in names if n.lower() not in LOG_WORDS)
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.-])(?:{alternatives})(?![\w-]|\.\w)", re.IGNORECASE)


def _ipv6_sub(match: re.Match) -> str:
    text = match.group(0)
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return text
    return "<ipv6>"


def scrub_line(line: str, host_names: tuple[str, ...] | None = None) -> str:
    """Replace IPv4/IPv6 addresses with ``<ip>``/``<ipv6>`` and whole host-name tokens with
    ``<host>``."""
    pattern = _host_pattern(tuple(host_names) if host_names is not None else _host_names())
    if pattern is not None:
        line = pattern.sub("<host>", line)
    line = _IPV4.sub("<ip>", line)
    if ":" in line:
        line = _IPV6_CANDIDATE.sub(_ipv6_sub, line)
    return line


# A variable whose name says it holds a credential: its value is never recorded.
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|API_?KEY|PRIVATE|_KEY\b|^KEY\b"
                          r"|AUTH|COOKIE|SESSION", re.IGNORECASE)


def scrub_environment(env: dict[str, str]) -> dict[str, str]:
    """An environment fit to record: credentials' values ``<redacted>`` (by the variable's name),
    machine identity scrubbed from the rest as from log lines (``scrub_line``)."""
    return {name: "<redacted>" if _SECRET_NAME.search(name) else scrub_line(value)
            for name, value in sorted(env.items())}
