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


@pytest.mark.parametrize("line, expected", [
    ("vmstat says vm is busy", "vmstat says <host> is busy"),
    ("host vm.", "host <host>."),
    ("on vm:29500 and vm-2 and avm", "on <host>:29500 and vm-2 and avm"),
    ("VM rebooted", "<host> rebooted"),
])
def test_only_whole_host_name_tokens_are_replaced(line, expected):
    assert scrub_line(line, ("vm",)) == expected


def test_a_host_named_like_a_log_word_keeps_the_log_readable():
    line = " iteration        3/       8 | lm loss: 5.0E+00 | learning rate: 1.0E-04 |"
    assert scrub_line(line, ("iteration", "loss")) == line
