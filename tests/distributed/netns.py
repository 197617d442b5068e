"""Hosts for the multi-host test: network namespaces joined by veth pairs to one bridge (a
switch in a namespace of its own), each with its own address. Made by the test and removed by it
(`close`), also when the test fails. Nothing is added to the machine's own namespace: every
interface and address lives in a namespace made here.

Needs root and `ip` (iproute2); `available()` says why not otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

SUBNET = "10.231.7"


def available() -> str | None:
    """None when namespaces can be made here, else the reason."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "ip (iproute2) is not installed"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class Network:
    """A switch and hosts on SUBNET.0/24; `host(name)` adds one, `address(name)` is its IPv4."""

    def __init__(self) -> None:
        self.prefix = f"pt{uuid.uuid4().hex[:6]}"
        self.switch = f"{self.prefix}-sw"
        self.hosts: dict[str, str] = {}
        _ip("netns", "add", self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")

    def namespace(self, name: str) -> str:
        """The namespace of host `name`."""
        return f"{self.prefix}-{name}"

    def address(self, name: str) -> str:
        """The IPv4 address of host `name`."""
        return self.hosts[name]

    def host(self, name: str) -> str:
        """A new host joined to the switch; its address."""
        namespace = self.namespace(name)
        address = f"{SUBNET}.{len(self.hosts) + 2}"
        port = f"p{len(self.hosts)}"
        _ip("netns", "add", namespace)
        _ip(
            "-n",
            self.switch,
            "link",
            "add",
            port,
            "type",
            "veth",
            "peer",
            "eth0",
            "netns",
            namespace,
        )
        _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
        _ip("-n", namespace, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", namespace, "link", "set", "eth0", "up")
        _ip("-n", namespace, "link", "set", "lo", "up")
        self.hosts[name] = address
        return address

    def cut(self, name: str) -> None:
        """Take host `name`'s link down (as a pulled cable: packets to and from it are lost)."""
        _ip("-n", self.namespace(name), "link", "set", "eth0", "down")

    def restore(self, name: str) -> None:
        """Bring host `name`'s link up again."""
        _ip("-n", self.namespace(name), "link", "set", "eth0", "up")

    def close(self) -> None:
        """Remove every namespace made here (their interfaces go with them)."""
        for name in [*(self.namespace(h) for h in self.hosts), self.switch]:
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)
        self.hosts.clear()
