"""Archived logs carry no machine IPs or host names."""

from __future__ import annotations

import socket

import pytest

from harness.runner.scrub import scrub_line


@pytest.mark.parametrize("line, expected", [
    ("connect to 10.1.2.3:29500 ok", "connect to <ip>:29500 ok"),
    ("hosts=127.0.0.1,192.168.0.254", "hosts=<ip>,<ip>"),
    ("nccl via fe80::1ff:fe23:4567:890a%eth0", "nccl via <ipv6>%eth0"),
    ("addr 2001:db8:85a3:0:0:8a2e:370:7334 up", "addr <ipv6> up"),
    ("torch 2.11.0 cuda 12.4.1 version 1.2.3.4.5", "torch 2.11.0 cuda 12.4.1 version 1.2.3.4.5"),
    ("time 12:30:45 loss 1.5", "time 12:30:45 loss 1.5"),
    ("lr 1.000000E-04 | 999.1.1.1", "lr 1.000000E-04 | 999.1.1.1"),
])
def test_addresses_are_replaced_and_versions_kept(line, expected):
    assert scrub_line(line, host_names=()) == expected


def test_host_names_are_replaced():
    assert scrub_line("rank 0 on gpu-node-17.cluster", ("gpu-node-17.cluster", "gpu-node-17")) == "rank 0 on <host>"
    assert scrub_line("rank 0 on gpu-node-17", ("gpu-node-17.cluster", "gpu-node-17")) == "rank 0 on <host>"


def test_this_machines_host_name_is_scrubbed_by_default():
    host = socket.gethostname()
    assert host not in scrub_line(f"started on {host}")
