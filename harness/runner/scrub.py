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


def _ipv6_sub(match: re.Match) -> str:
    text = match.group(0)
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return text
    return "<ipv6>"


def scrub_line(line: str, host_names: tuple[str, ...] | None = None) -> str:
    """Replace IPv4/IPv6 addresses with ``<ip>``/``<ipv6>`` and host names with ``<host>``."""
    for name in host_names if host_names is not None else _host_names():
        if name in line:
            line = line.replace(name, "<host>")
    line = _IPV4.sub("<ip>", line)
    if ":" in line:
        line = _IPV6_CANDIDATE.sub(_ipv6_sub, line)
    return line
