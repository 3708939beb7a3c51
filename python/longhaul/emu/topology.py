"""The ``Emulator``: two clusters of hosts (network namespaces) joined by the data plane.

Per host ``NAME-a<i>`` / ``NAME-b<i>``:
- ``wan0``: a TUN device owned by the data plane; the route to the other cluster goes
  through it, so every packet between clusters crosses the emulated link; with ``links`` = N > 1,
  ``wan0 .. wan<N-1>``, one per parallel link, and the route is a multipath (ECMP) route over
  them: flows are spread by a hash of addresses and ports (``fib_multipath_hash_policy = 1``),
  and a link whose devices lose carrier (``longhaul emu link down``) is skipped
  (``ignore_routes_with_linkdown = 1``) until it comes back;
- with more than one host per cluster, ``lan0``: a veth to the cluster's bridge (namespace
  ``NAME-swa``/``NAME-swb``), so traffic inside a cluster is not delayed;
- addresses ``10.77.1.<i+1>`` (cluster A) and ``10.77.2.<i+1>`` (cluster B), a range used
  only inside these namespaces;
- sysctls: TCP buffer maxima (tcp_rmem/tcp_wmem), SACK on or off, rp_filter off, IPv6 off;
  the route across the link carries initcwnd / rto_min / quickack when the link asks;
- with ``management=True``, ``mgmt0``: a veth to the bridge of namespace ``NAME-mg``
  (``10.77.250.0/24``), for launchers such as ``mpirun`` that must reach every host without
  their control traffic crossing, or being counted on, the emulated link.

Use as a context manager; it tears everything down on exit, exception, Ctrl-C, SIGTERM and
SIGHUP; a reaper process does it if the controller is killed with SIGKILL.

While it is up, a thread watches the data plane (``_watch``): a data plane that exits, or that stops
publishing its statistics for ``STALL_S`` (stopped, hung), ends the run at once. The watcher wakes
the main thread with ``WATCH_SIGNAL``, whose handler raises ``DataPlaneFailed`` wherever the command
is (waiting for iperf3, mpirun, a user's command): it unwinds through the teardown, and the command
stores nothing and exits with the one error line and status 2, as every failure of the emulated
run does. A run through a dead data plane measured nothing real (iperf3 once reported 41 MB/s).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from longhaul.emu import links, state, system
from longhaul.emu.options import LinkOptions
from longhaul.errors import UserError, terminated_on_signals

SUBNET = {"a": "10.77.1", "b": "10.77.2"}
TUN_PREFIX = "wan"
TUN_NAME = TUN_PREFIX + "0"
LAN_NAME = "lan0"
MGMT_NAME = "mgmt0"
MGMT_SUBNET = "10.77.250"
MGMT_HOST_OFFSET = {"a": 1, "b": 101}  # A hosts .1.., B hosts .101..; the launcher's namespace is .254
READY_TIMEOUT_S = 10.0
#: The data plane publishes its statistics every 200 ms (longhaul-wan's --interval-ms default,
#: crates/longhaul-wan/src/link.rs) at real-time priority: none for this long is a stalled data plane.
STALL_S = 5.0
#: How often the watcher looks (a death is reported within this, plus the teardown)
WATCH_EVERY_S = 0.1
#: The signal the watcher sends the main thread (SIGUSR2 goes to the data plane, never to us)
WATCH_SIGNAL = signal.SIGUSR2


class DataPlaneFailed(UserError):
    """The data plane died or stalled while the run was up: whatever was measured is void."""


class Emulator:
    def __init__(self, link: LinkOptions, name: str | None = None, spin_us: int = 50, rt_priority: int = 10,
                 idle_wake_us: int = 0, dataplane_cpus: tuple[int, int] | None = None,
                 management: bool = False):
        self.link = link.validated()
        self.name = state.check_name(name) if name is not None else state.new_name()
        self.spin_us = spin_us
        self.idle_wake_us = idle_wake_us
        #: (A->B thread's CPU, B->A thread's CPU), or None: wherever the scheduler puts them.
        self.dataplane_cpus = dataplane_cpus
        self.rt_priority = rt_priority
        n = link.hosts
        self.hosts = {side: [f"{self.name}-{side}{i}" for i in range(n)] for side in "ab"}
        self.switches = [f"{self.name}-sw{side}" for side in "ab"] if n > 1 else []
        self.management = f"{self.name}-mg" if management else None
        self.dataplane: subprocess.Popen | None = None
        self.reaper: subprocess.Popen | None = None
        self.run_state: state.RunState | None = None
        self._signals = contextlib.ExitStack()  # SIGTERM/SIGHUP handling while the run is up
        self._failure: DataPlaneFailed | None = None  # set by the watcher
        self._closing = False
        self._stop_watch = threading.Event()
        self._watcher: threading.Thread | None = None

    # -- addresses -------------------------------------------------------------------
    def address(self, side: str, index: int = 0) -> str:
        return f"{SUBNET[side]}.{index + 1}"

    def management_address(self, side: str, index: int = 0) -> str:
        return f"{MGMT_SUBNET}.{MGMT_HOST_OFFSET[side] + index}"

    def env(self) -> dict[str, str]:
        """LH_A0=10.77.1.1 ... for commands run on the hosts."""
        env = {f"LH_{s.upper()}{i}": self.address(s, i) for s in "ab" for i in range(self.link.hosts)}
        env["LH_EMU_NAME"] = self.name
        return env

    @property
    def state_dir(self) -> Path:
        """The running emulator's directory of state (between __enter__ and close)."""
        if self.run_state is None:
            raise RuntimeError(f"emulator {self.name} is not running")
        return self.run_state.dir

    @property
    def management_netns(self) -> str:
        """The launcher's namespace on the management network (an emulator made with management=True)."""
        if self.management is None:
            raise RuntimeError(f"emulator {self.name} has no management network")
        return self.management

    @property
    def stats_path(self) -> Path:
        return self.state_dir / "stats.json"

    @property
    def control_path(self) -> Path:
        """The links the data plane is to keep down (``longhaul.emu.links``)."""
        return self.state_dir / links.CONTROL_FILE

    @property
    def link_devices(self) -> list[str]:
        return [f"{TUN_PREFIX}{k}" for k in range(self.link.links)]

    # -- life cycle ------------------------------------------------------------------
    def __enter__(self) -> Emulator:
        system.require_privileges()
        binary = system.dataplane_binary()
        extra = [self.management] if self.management else []
        run_state = state.claim(self.name, self.hosts["a"] + self.hosts["b"] + self.switches + extra)
        self.run_state = run_state
        # SIGTERM/SIGHUP raise Terminated, which unwinds through __exit__: the run is torn down.
        self._signals.enter_context(terminated_on_signals("the emulated run was torn down"))
        try:
            self._start_reaper(run_state)
            self._create_namespaces()
            self._start_dataplane(binary, run_state)
            try:
                self._configure_hosts()
                if self.management:
                    self._create_management()
            except (system.CommandFailed, UserError):
                died = self._died_during_setup()
                if died is not None:   # a device it owned went with it: say that, not what `ip` said
                    raise died from None
                raise
            self._start_watch()
        except BaseException:
            self.close()
            raise
        return self

    def _died_during_setup(self) -> DataPlaneFailed | None:
        """Why a set-up command failed, if the data plane died under it (its TUN devices go with it)."""
        assert self.dataplane is not None   # started
        try:   # it closes its devices just before it can be reaped
            self.dataplane.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return None
        return self._verdict()

    def __exit__(self, *exc) -> None:
        self.close()
        if exc[0] is None and self._failure is not None:  # it died as the commands ended
            raise self._failure

    def check_dataplane(self) -> None:
        """Raise ``DataPlaneFailed`` if the data plane has died or stalled (the watcher's verdict,
        or a look now): for work outside the main thread, which the watcher's signal cannot reach."""
        if self._failure is None and self.dataplane is not None:
            self._failure = self._verdict()
        if self._failure is not None:
            raise self._failure

    # -- the watch ---------------------------------------------------------------------
    def _start_watch(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._signals.enter_context(_raising_on(WATCH_SIGNAL, self._on_watch_signal))
        self._watcher = threading.Thread(target=self._watch, name=f"watch-{self.name}", daemon=True)
        self._watcher.start()

    def _on_watch_signal(self, signum, frame) -> None:
        if self._failure is not None and not self._closing:
            raise self._failure

    def _stats_stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.stats_path)
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns

    def _verdict(self, last_sign: float | None = None) -> DataPlaneFailed | None:
        """Why the data plane is not running (None: it is). ``last_sign``: when its statistics last
        changed (monotonic seconds), for the stall check."""
        assert self.dataplane is not None
        code = self.dataplane.poll()
        pid = self.dataplane.pid
        if code is not None:
            how = (f"was killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals()
                   else f"exited with status {code}")
            return DataPlaneFailed(f"the emulator's data plane (pid {pid}) died during the run (it {how}); "
                                   "the run was torn down and nothing was stored")
        if last_sign is not None and time.monotonic() - last_sign > STALL_S:
            return DataPlaneFailed(f"the emulator's data plane (pid {pid}) stalled during the run (no statistics "
                                   f"for {STALL_S:g} s; they come every 0.2 s); the run was torn down and nothing "
                                   "was stored")
        return None

    def _watch(self) -> None:
        stamp, last_sign = self._stats_stamp(), time.monotonic()
        while not self._stop_watch.wait(WATCH_EVERY_S):
            now_stamp = self._stats_stamp()
            if now_stamp != stamp:
                stamp, last_sign = now_stamp, time.monotonic()
            failure = self._verdict(last_sign)
            if failure is not None:
                self._failure = failure
                if not self._closing:
                    with contextlib.suppress(OSError, ValueError):
                        signal.pthread_kill(threading.main_thread().ident or 0, WATCH_SIGNAL)
                return

    def close(self) -> None:
        self._closing = True
        self._stop_watch.set()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join()
            if self._failure is None and self.dataplane is not None:  # died after the watcher's last look
                self._failure = self._verdict()
        # Ignore further SIGTERM/SIGINT while tearing down, so the run is never half removed.
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            if self.dataplane is not None and self.dataplane.poll() is None:
                self.dataplane.terminate()
                with contextlib.suppress(OSError):  # a stopped (stalled) one acts on SIGTERM only once continued
                    self.dataplane.send_signal(signal.SIGCONT)
                try:
                    self.dataplane.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    self.dataplane.kill()
                    self.dataplane.wait()
            if self.run_state is not None:
                state.teardown(self.run_state)
            if self.reaper is not None and self.reaper.poll() is None:
                self.reaper.kill()
                self.reaper.wait()
        finally:
            signal.signal(signal.SIGINT, old_int)
            self._signals.close()

    def _start_reaper(self, run_state: state.RunState) -> None:
        env = dict(os.environ)
        pkg_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = pkg_root + os.pathsep + env.get("PYTHONPATH", "")
        self.reaper = subprocess.Popen(
            [sys.executable, "-m", "longhaul.emu.reaper", self.name, str(os.getpid())],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=env)  # own session: Ctrl-C in the terminal does not reach it
        run_state.set_process("reaper", self.reaper.pid)

    def _create_namespaces(self) -> None:
        window = self.link.effective_window()
        for ns in self.hosts["a"] + self.hosts["b"] + self.switches:
            system.ip("netns", "add", ns)
            system.ip("-n", ns, "link", "set", "lo", "up")
            system.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
            system.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
            system.sysctl(ns, "net.ipv4.conf.all.rp_filter", "0")
            system.sysctl(ns, "net.ipv4.conf.default.rp_filter", "0")
        for ns in self.hosts["a"] + self.hosts["b"]:
            # Maxima for TCP autotuning: the stock 4 MB tcp_wmem caps one stream at 10 ms to ~1.25 Gb/s.
            system.sysctl(ns, "net.ipv4.tcp_rmem", f"4096 131072 {window}")
            system.sysctl(ns, "net.ipv4.tcp_wmem", f"4096 16384 {self.link.wmem_max or window}")
            system.sysctl(ns, "net.ipv4.tcp_no_metrics_save", "1")  # each run starts from a clean slate
            system.sysctl(ns, "net.ipv4.tcp_sack", "1" if self.link.sack else "0")
            # RACK (RFC 8985) is bit 0 of tcp_recovery, Linux's default since 4.18 (ip-sysctl.rst).
            system.sysctl(ns, "net.ipv4.tcp_recovery", "1" if self.link.rack else "0")
            if self.link.links > 1:
                # ECMP per flow on addresses and ports (policy 1, "Layer 4"; the default 0 hashes the
                # addresses only, so one host pair would use one link), and next hops whose device has
                # no carrier are skipped (ip-sysctl.rst, Linux 4.12+ and 4.3+; both per namespace).
                system.sysctl(ns, "net.ipv4.fib_multipath_hash_policy", "1")
                if Path("/proc/sys/net/ipv4/fib_multipath_hash_seed").exists():
                    # The hash's key (Linux 6.11+; 0 or older kernels: random at boot): from the run's seed,
                    # so the same flows (addresses and ports) take the same links in every run.
                    system.sysctl(ns, "net.ipv4.fib_multipath_hash_seed", str((self.link.seed & 0xFFFFFFFF) or 1))
                for conf in ("all", "default"):
                    system.sysctl(ns, f"net.ipv4.conf.{conf}.ignore_routes_with_linkdown", "1")
        for side, sw in zip("ab", self.switches):
            system.ip("-n", sw, "link", "add", "br0", "type", "bridge")
            self._set_mtu(sw, "br0")
            system.ip("-n", sw, "link", "set", "br0", "up")
            for i, ns in enumerate(self.hosts[side]):
                port = f"p{i}"
                system.ip("-n", ns, "link", "add", LAN_NAME, "type", "veth", "peer", "name", port, "netns", sw)
                self._set_mtu(ns, LAN_NAME)
                self._set_mtu(sw, port)
                system.ip("-n", sw, "link", "set", port, "master", "br0", "up")
                system.ip("-n", ns, "addr", "add", f"{self.address(side, i)}/24", "dev", LAN_NAME)
                system.ip("-n", ns, "link", "set", LAN_NAME, "up")

    def _set_mtu(self, ns: str, dev: str) -> None:
        try:
            system.ip("-n", ns, "link", "set", dev, "mtu", str(self.link.mtu))
        except system.CommandFailed as e:
            raise UserError(f"--mtu: the kernel refused MTU {self.link.mtu} on {dev} ({e.stderr}); "
                            "TUN and veth devices take 576..65535 here") from None

    def _start_dataplane(self, binary: str, run_state: state.RunState) -> None:
        self.control_path.write_text("")
        args = [binary, "link", "--ifname", TUN_PREFIX, "--links", str(self.link.links),
                "--control", str(self.control_path), "--detect-us", str(round(self.link.detect_ms * 1000)),
                "--stats", str(self.stats_path),
                "--spin-us", str(self.spin_us), "--idle-wake-us", str(self.idle_wake_us), "--rt-priority", str(self.rt_priority), "--parent-pid", str(os.getpid()),
                "--ab-cpu", str(self.dataplane_cpus[0] if self.dataplane_cpus else -1),
                "--ba-cpu", str(self.dataplane_cpus[1] if self.dataplane_cpus else -1),
                "--ab", self.link.ab.spec(self.link.seed), "--ba", self.link.ba.spec(self.link.seed + 1)]
        for side in "ab":
            for i, ns in enumerate(self.hosts[side]):
                args += [f"--{side}", f"{ns}={self.address(side, i)}"]
        try:
            self.dataplane = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True)
        except OSError as err:   # $LONGHAUL_WAN names no program (or one that cannot run)
            raise UserError(f"the data plane '{binary}' cannot be started ({err.strerror or err}); build it with "
                            "`cargo build --release -p longhaul-wan` or set LONGHAUL_WAN to its path") from None
        run_state.set_process("dataplane", self.dataplane.pid)
        out = self.dataplane.stdout
        assert out is not None  # stdout=PIPE
        ready, _, _ = select.select([out], [], [], READY_TIMEOUT_S)
        line = out.readline() if ready else ""
        if not line.startswith("ready"):
            self.dataplane.kill()
            try:   # what it said last; a child it left holding the pipe must not hang the teardown
                said = self.dataplane.communicate(timeout=2)[1] or ""
            except subprocess.TimeoutExpired:
                said = ""
            last = said.strip().splitlines()
            raise UserError(f"the data plane '{binary}' did not start: {last[-1] if last else 'no answer'}")
        self.offload = "offload=true" in line
        if self.link.links > 1 and "carrier=true" not in line:
            raise UserError("--wan-links: this kernel cannot switch a TUN device's carrier (TUNSETCARRIER, Linux "
                            "5.0+), which takes a failed link out of the routes; use --wan-links 1")

    def _configure_hosts(self) -> None:
        devices = self.link_devices
        for side, other in (("a", "b"), ("b", "a")):
            for i, ns in enumerate(self.hosts[side]):
                for dev in devices:
                    self._set_mtu(ns, dev)
                    system.ip("-n", ns, "link", "set", dev, "up")
                if self.link.hosts == 1:
                    # On lo with several links: the host's address outlives any one link's carrier.
                    system.ip("-n", ns, "addr", "add", f"{self.address(side, i)}/32", "dev",
                              TUN_NAME if len(devices) == 1 else "lo")
                via = ["dev", TUN_NAME] if len(devices) == 1 else [w for d in devices for w in ("nexthop", "dev", d)]
                system.ip("-n", ns, "route", "add", f"{SUBNET[other]}.0/24", "src", self.address(side, i),
                          *self.link.route_options(), *via)

    def _create_management(self) -> None:
        mg = self.management_netns
        system.ip("netns", "add", mg)
        system.ip("-n", mg, "link", "set", "lo", "up")
        system.ip("-n", mg, "link", "add", "br0", "type", "bridge")
        system.ip("-n", mg, "addr", "add", f"{MGMT_SUBNET}.254/24", "dev", "br0")
        system.ip("-n", mg, "link", "set", "br0", "up")
        for side in "ab":
            for i, ns in enumerate(self.hosts[side]):
                port = f"m{side}{i}"
                system.ip("-n", ns, "link", "add", MGMT_NAME, "type", "veth", "peer", "name", port, "netns", mg)
                system.ip("-n", mg, "link", "set", port, "master", "br0", "up")
                system.ip("-n", ns, "addr", "add", f"{self.management_address(side, i)}/24", "dev", MGMT_NAME)
                system.ip("-n", ns, "link", "set", MGMT_NAME, "up")

    # -- use -------------------------------------------------------------------------
    def stats(self, refresh: bool = True) -> dict:
        """The data plane's counters (see crates/longhaul-wan/src/stats.rs for the keys)."""
        if refresh and self.dataplane is not None and self.dataplane.poll() is None:
            before = self.stats_path.stat().st_mtime_ns if self.stats_path.exists() else 0
            self.dataplane.send_signal(signal.SIGUSR1)
            for _ in range(100):
                if self.stats_path.exists() and self.stats_path.stat().st_mtime_ns != before:
                    break
                time.sleep(0.002)
        try:
            return json.loads(self.stats_path.read_text())
        except (OSError, ValueError):
            return {}

    def host_cmd(self, side: str, index: int, argv: list[str]) -> list[str]:
        """argv to run a program on host `side``index` (ip netns exec)."""
        return ["ip", "netns", "exec", self.hosts[side][index], *argv]

    def popen(self, side: str, index: int, argv: list[str], **kw) -> subprocess.Popen:
        env = {**os.environ, **self.env(), **kw.pop("env", {})}
        return subprocess.Popen(self.host_cmd(side, index, argv), env=env, **kw)


@contextlib.contextmanager
def _raising_on(signum: int, handler):
    """``handler`` for ``signum`` within the block (main thread only), the old one back after."""
    old = signal.signal(signum, handler)
    try:
        yield
    finally:
        signal.signal(signum, old)
