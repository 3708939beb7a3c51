"""What the emulator needs from the machine: privileges, /dev/net/tun, the ``ip`` command
and the ``longhaul-wan`` binary. Failures the user can fix are one-line ``UserError``s."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from longhaul.errors import UserError

CAP_NET_ADMIN = 12  # linux/capability.h
CAP_SYS_ADMIN = 21  # `ip netns add` bind-mounts the namespace


def _effective_caps() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def require_privileges() -> None:
    """Refuse (one line, exit 2) unless we can create namespaces and TUN devices."""
    caps = _effective_caps()
    if not (caps >> CAP_NET_ADMIN) & 1 or not (caps >> CAP_SYS_ADMIN) & 1:
        raise UserError("longhaul emu needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces; "
                        "run it as root")
    if not os.path.exists("/dev/net/tun"):
        raise UserError("longhaul emu needs /dev/net/tun (TUN driver); load it with `modprobe tun` or run where it exists")
    if shutil.which("ip") is None:
        raise UserError("longhaul emu needs the `ip` command (Debian package iproute2)")


def dataplane_binary() -> str:
    """The data plane: $LONGHAUL_WAN, else target/release of this checkout, else PATH."""
    env = os.environ.get("LONGHAUL_WAN")
    if env:
        return env
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "target" / "release" / "longhaul-wan"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("longhaul-wan")
    if found:
        return found
    raise UserError("the data plane binary longhaul-wan was not found: build it with "
                    "`cargo build --release -p longhaul-wan` (or set LONGHAUL_WAN to its path)")


class CommandFailed(Exception):
    def __init__(self, args: list[str], stderr: str):
        self.stderr = stderr.strip().splitlines()[-1] if stderr.strip() else "failed"
        super().__init__(f"{' '.join(args)}: {self.stderr}")


def ip(*args: str, check: bool = True) -> str:
    """Run `ip ARGS`; raise CommandFailed with the kernel's message on failure."""
    cmd = ["ip", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and p.returncode != 0:
        raise CommandFailed(cmd, p.stderr)
    return p.stdout


def ns_exec(ns: str, *cmd: str, check: bool = True) -> str:
    return ip("netns", "exec", ns, *cmd, check=check)


def sysctl(ns: str, key: str, value: str) -> None:
    """Write a sysctl inside namespace `ns` (through /proc/sys of that namespace)."""
    ns_exec(ns, "sh", "-c", f"echo '{value}' > /proc/sys/{key.replace('.', '/')}")


def available_congestion_controls() -> list[str]:
    try:
        return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError:
        return []


def check_congestion_control(cc: str, name: str = "--cc") -> str:
    """``cc`` if this machine has it; ``name``: the option or file key that gave it. Modules such
    as bbr load on first use; try loading before refusing."""
    have = available_congestion_controls()
    if cc not in have:
        if shutil.which("modprobe"):
            subprocess.run(["modprobe", f"tcp_{cc}"], capture_output=True)
        have = available_congestion_controls()
    if cc not in have:
        raise UserError(f"{name}: '{cc}' is not available here (choose one of: {', '.join(have) or 'none'})")
    return cc
