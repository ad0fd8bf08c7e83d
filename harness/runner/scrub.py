"""Remove machine identity (IP addresses, host names) from archived logs.

The seeds require that archived logs carry no machine IPs; host names go too.
"""

from __future__ import annotations

import re
import socket
from functools import lru_cache

# An IPv4 address not glued to other digits/dots (so versions like 2.11.0 stay intact).
_IPV4 = re.compile(
    r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\d.]*\d)"
)
# IPv6: at least three colon-separated hex groups, or compressed forms with '::'.
_IPV6 = re.compile(
    r"(?<![\w:])(?:[0-9a-fA-F]{1,4}:){2,7}[0-9a-fA-F]{1,4}(?![\w:])"
    r"|(?<![\w:])(?:[0-9a-fA-F]{1,4}:){1,6}:(?:[0-9a-fA-F]{1,4})?(?![\w:])"
)
# ``[0-9a-f]{1,4}:`` also matches times like 12:30:45; require a hex letter or '::'.
_LOOKS_LIKE_TIME = re.compile(r"^\d{1,2}(?::\d{1,2}){1,3}$")


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
    if _LOOKS_LIKE_TIME.match(text):
        return text
    return "<ipv6>"


def scrub_line(line: str, host_names: tuple[str, ...] | None = None) -> str:
    """Replace IPv4/IPv6 addresses with ``<ip>``/``<ipv6>`` and host names with ``<host>``."""
    for name in host_names if host_names is not None else _host_names():
        if name in line:
            line = line.replace(name, "<host>")
    line = _IPV4.sub("<ip>", line)
    if ":" in line:
        line = _IPV6.sub(_ipv6_sub, line)
    return line
