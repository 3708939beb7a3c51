"""Real MPI programs with ranks placed in the emulated clusters (``longhaul emu mpi``).

One rank per emulated host: ``ranks_per_cluster`` hosts in each of clusters A and B, rank
order ``block`` (A0..A{N-1}, then B0..) or ``cyclic`` (A0, B0, A1, B1, ...).

Open MPI 4.1 (Debian ``openmpi-bin``) treats each host namespace as a remote node:
- ``mpirun`` runs in the emulator's management namespace (``NAME-mg``) and starts one ``orted``
  per host through a launcher agent (``plm_rsh_agent``) that enters the host's namespace and a
  new UTS namespace named after the host. The distinct host name keeps Open MPI from treating
  all hosts as one node (shared memory between "nodes", one session directory in /tmp).
  Running the ranks with ``ip netns exec`` under one mpirun does not work: each rank's PMIx
  client dials 127.0.0.1 of the root namespace.
- launcher traffic (``oob``) stays on the management bridge (``oob_tcp_if_include``);
- MPI traffic (``btl tcp,self``) is restricted to the host's cluster interface
  (``btl_tcp_if_include``: ``wan0`` with one host per cluster, else ``lan0``), so a message
  between clusters crosses the emulated link and one inside a cluster crosses the bridge;
- ``--bind-to none``: with the default binding every orted binds its rank to core 0;
- ``mpi_yield_when_idle 1``: every "node" has one slot, so Open MPI does not know that all
  ranks share this machine's cores; without yielding, ranks waiting in a collective busy-poll
  and starve the ranks (and the data plane) doing the work.
Sources: Open MPI FAQ "Tuning the run-time characteristics of MPI TCP communications"
(https://www.open-mpi.org/faq/?category=tcp, "How do I tell Open MPI which IP interfaces /
networks to use?") and ``ompi_info --param all all --level 9`` of Open MPI 4.1.4.

MPICH 4 (Debian ``mpich``: hydra, ch4:ucx) starts every rank itself: ``mpiexec.hydra`` runs in
the management namespace and each rank through a wrapper that enters the namespace of the host
chosen by ``PMI_RANK`` (the PMI socket is inherited, so it works across namespaces). UCX gets
``UCX_TLS=tcp,self`` and ``UCX_NET_DEVICES`` = the cluster interface, and
``MPIR_CVAR_NOLOCAL=1`` keeps MPICH from using shared memory between ranks it sees on one
machine. Sources: the CVAR's own description in MPICH 4.0.2 (``mpivars``: "force all processes
to operate as though all processes are located on another node"), and NVIDIA DOCA UCX
documentation (https://docs.nvidia.com/doca/archive/2-9-0/DOCA+UCX: UCX_NET_DEVICES restricts
the devices UCX uses; UCX_TLS selects transports). mpi4py's wheel carries an MPICH-ABI module that needs
``libmpi.so.12``; Debian's libmpich12 ships it as ``libmpich.so.12`` only, so the ranks get a
directory with that one link first on ``LD_LIBRARY_PATH`` and ``MPI4PY_MPIABI=mpich``.

``mpich-ofi`` is MPICH 5.0.2 from PyPI (package ``mpich``, device ``ch4:ucx ofi``, libfabric
bundled), which ``scripts/bootstrap.sh`` installs into a venv of its own (``target/mpich-ofi``):
the same hydra launch, but ``MPIR_CVAR_CH4_NETMOD=ofi`` with libfabric's ``tcp`` provider
(``FI_PROVIDER=tcp``, ``FI_TCP_IFACE`` = the cluster interface) instead of UCX, whose TCP
transport can hang in ``MPI_Finalize`` (openucx/ucx#8738, see docs/models/emulator.md); its libraries find
their bundled libfabric through ``lib/mpich`` on ``LD_LIBRARY_PATH``.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from longhaul.emu.topology import MGMT_SUBNET, Emulator
from longhaul.errors import UserError

#: The ch4:ofi MPICH's prefix (scripts/bootstrap.sh, step 6).
MPICH_OFI_PREFIX = Path(__file__).resolve().parents[3] / "target" / "mpich-ofi"
#: library -> (launcher, what to install when it is missing).
LIBRARIES = {"openmpi": ("mpirun.openmpi", "the Debian package openmpi-bin"),
             "mpich": ("mpiexec.hydra", "the Debian package mpich"),
             "mpich-ofi": (str(MPICH_OFI_PREFIX / "bin" / "mpiexec.hydra"),
                           "MPICH 5.0.2 from PyPI into target/mpich-ofi (scripts/bootstrap.sh)")}
LIBMPICH_GLOB = ("/usr/lib/*/libmpich.so.12", "/usr/lib/libmpich.so.12", "/usr/lib64/libmpich.so.12")
PLACEMENTS = ("block", "cyclic")
#: Open MPI's MCA parameter names (``ompi_info --param all all``): letters, digits, underscores.
MCA_NAME = re.compile(r"[A-Za-z0-9_]+")
#: Environment variable names (POSIX shell names): a letter or underscore, then letters, digits, underscores.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_RANKS_PER_CLUSTER = 16  # = the emulator's --hosts limit: one rank per emulated host

# Enters the host's namespace and a fresh UTS namespace named after the host, then runs what
# mpirun asks for (an orted command line, given as words for a remote shell).
_AGENT = """#!/bin/sh
# plm_rsh_agent written by longhaul.emu.mpi: AGENT HOST COMMAND...
host="$1"; shift
case "$host" in
  *-a[0-9]*) cluster=a ;;
  *-b[0-9]*) cluster=b ;;
  *) echo "longhaul agent: unknown host $host" >&2; exit 1 ;;
esac
exec ip netns exec "$host" unshare --uts sh -c "hostname $host; LONGHAUL_CLUSTER=$cluster; export LONGHAUL_CLUSTER; $*"
"""

# Rank wrapper for MPICH's hydra: the rank's host is word $PMI_RANK of $LONGHAUL_RANK_HOSTS.
_WRAPPER = """#!/bin/sh
# rank wrapper written by longhaul.emu.mpi: WRAPPER PROGRAM ARGS...
i=0; host=""
for h in $LONGHAUL_RANK_HOSTS; do
  [ "$i" = "$PMI_RANK" ] && host="$h"
  i=$((i + 1))
done
case "$host" in
  *-a[0-9]*) cluster=a ;;
  *-b[0-9]*) cluster=b ;;
  *) echo "longhaul wrapper: no host for PMI_RANK=$PMI_RANK" >&2; exit 1 ;;
esac
export LONGHAUL_CLUSTER="$cluster"
# $LONGHAUL_RANK_ENV (the job's --env, as shell assignments) is read by the last shell only, so
# that it reaches the program and not ip, unshare or the shell.
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0"; . "$LONGHAUL_RANK_ENV"; exec "$@"' "$host" "$@"
"""


@dataclass
class MpiJob:
    """A program to run on 2 x ``ranks_per_cluster`` ranks. ``mca``: extra Open MPI MCA
    parameters (name -> value); ``env``: extra environment of every rank (the ranks only, never
    the launcher: ``mpirun -x NAME=VALUE`` for Open MPI, the rank wrapper for MPICH)."""

    argv: list[str]
    ranks_per_cluster: int = 1
    placement: str = "block"
    library: str = "openmpi"
    mca: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 600.0

    def validated(self, hosts: int | None = None) -> MpiJob:
        if self.library not in LIBRARIES:
            raise UserError(f"--mpi: '{self.library}' is not one of {', '.join(LIBRARIES)}")
        if self.placement not in PLACEMENTS:
            raise UserError(f"--placement: '{self.placement}' is not one of {', '.join(PLACEMENTS)}")
        limit = hosts if hosts is not None else MAX_RANKS_PER_CLUSTER
        if not isinstance(self.ranks_per_cluster, int) or not 1 <= self.ranks_per_cluster <= limit:
            where = f"the {hosts} emulated hosts per cluster (--hosts)" if hosts is not None else "the emulator's host limit"
            raise UserError(f"--ranks-per-cluster: {self.ranks_per_cluster} is more than {where} can hold "
                            f"(one rank per host; valid range 1..{limit})")
        if not self.argv:
            raise UserError("no MPI program: give it after --, e.g. -- ./a.out ARGS")
        for name in self.mca:
            check_mca_name(name)
        for name in self.env:
            check_env_name(name)
        if self.mca and self.library != "openmpi":
            raise UserError(f"--mca: Open MPI parameters do not apply to --mpi {self.library} (use --env, "
                            "e.g. UCX_RNDV_THRESH=1M)")
        if not 1 <= self.timeout_s <= 86400:
            raise UserError(f"--timeout-s: {self.timeout_s} is out of range [1, 86400]")
        return self


def check_mca_name(name: str) -> str:
    """``name`` if it is an Open MPI MCA parameter name, else a one-line UserError."""
    if not isinstance(name, str) or not MCA_NAME.fullmatch(name):
        raise UserError(f"--mca: {str(name)!r} is not an MCA parameter name (letters, digits and underscores only, "
                        "e.g. btl_tcp_eager_limit)")
    return name


def check_env_name(name: str) -> str:
    """``name`` if it is an environment variable name, else a one-line UserError."""
    if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
        raise UserError(f"--env: {str(name)!r} is not an environment variable name (a letter or underscore, then "
                        "letters, digits and underscores, e.g. UCX_RNDV_THRESH)")
    return name


def launcher(library: str) -> str:
    """The library's launcher binary, or a one-line UserError naming the Debian package."""
    binary, package = LIBRARIES[library]
    found = shutil.which(binary)
    if found is None:
        raise UserError(f"--mpi {library}: {binary} not found; install {package}")
    return found


def resolve_program(argv: list[str]) -> list[str]:
    """The program as an absolute path (the ranks start in other namespaces); UserError if absent."""
    prog = argv[0]
    path = shutil.which(prog) if "/" not in prog else (prog if os.access(prog, os.X_OK) and os.path.isfile(prog) else None)
    if path is None:
        raise UserError(f"MPI program '{prog}' not found or not executable")
    return [os.path.abspath(path), *argv[1:]]


def rank_hosts(emu: Emulator, ranks_per_cluster: int, placement: str) -> list[str]:
    """Host (namespace) of each rank, in rank order."""
    a, b = emu.hosts["a"][:ranks_per_cluster], emu.hosts["b"][:ranks_per_cluster]
    if placement == "block":
        return a + b
    return [h for pair in zip(a, b) for h in pair]


def _wan_bytes(emu: Emulator) -> dict[str, int]:
    d = emu.stats().get("directions", {})
    return {k: int(d.get(k, {}).get("bytes_in", 0)) for k in ("ab", "ba")}


def openmpi_command(emu: Emulator, job: MpiJob, mpirun: str, agent: Path, hostfile: Path,
                    rank_env: dict[str, str]) -> list[str]:
    """``rank_env``: the ranks' own variables, given to mpirun as ``-x NAME=VALUE`` (set in the
    ranks only; mpirun, the agent and orted never see them)."""
    mca = {"plm_rsh_agent": str(agent), "oob_tcp_if_include": f"{MGMT_SUBNET}.0/24", "btl": "tcp,self",
           "btl_tcp_if_include": _cluster_if(emu), "mpi_yield_when_idle": "1", **job.mca}
    cmd = [mpirun, "--hostfile", str(hostfile), "-n", str(2 * job.ranks_per_cluster), "--bind-to", "none"]
    for k, v in mca.items():
        cmd += ["--mca", k, str(v)]
    for name, value in rank_env.items():
        cmd += ["-x", f"{name}={value}"]
    return ["ip", "netns", "exec", emu.management_netns, *cmd, *job.argv]


def mpich_command(emu: Emulator, job: MpiJob, mpiexec: str, wrapper: Path) -> list[str]:
    return ["ip", "netns", "exec", emu.management_netns, mpiexec, "-n", str(2 * job.ranks_per_cluster), str(wrapper),
            *job.argv]


def _search_path(*parts: str) -> str:
    return os.pathsep.join(p for p in parts if p)


def _mpich_libdirs(emu: Emulator, job: MpiJob) -> list[str]:
    """What the MPICH ranks need first on LD_LIBRARY_PATH."""
    if job.library == "mpich-ofi":
        lib = MPICH_OFI_PREFIX / "lib"
        return [str(lib / "mpich"), str(lib)]
    found = sorted(f for pattern in LIBMPICH_GLOB for f in glob.glob(pattern))
    if not found:
        raise UserError("--mpi mpich: libmpich.so.12 not found; install the Debian package libmpich12")
    libdir = emu.state_dir / "mpich-lib"
    libdir.mkdir(exist_ok=True)
    link = libdir / "libmpi.so.12"
    if not link.exists():
        link.symlink_to(found[0])
    return [str(libdir)]


def _mpich_env(emu: Emulator, job: MpiJob, hosts: list[str], libdirs: list[str]) -> dict[str, str]:
    ld = _search_path(*libdirs, os.environ.get("LD_LIBRARY_PATH", ""))
    if job.library == "mpich-ofi":
        return {"LONGHAUL_RANK_HOSTS": " ".join(hosts), "MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp",
                "FI_TCP_IFACE": _cluster_if(emu), "MPIR_CVAR_NOLOCAL": "1", "MPI4PY_MPIABI": "mpich",
                "LD_LIBRARY_PATH": ld}
    return {"LONGHAUL_RANK_HOSTS": " ".join(hosts), "UCX_TLS": "tcp,self", "UCX_NET_DEVICES": _cluster_if(emu),
            "MPIR_CVAR_NOLOCAL": "1", "MPI4PY_MPIABI": "mpich", "LD_LIBRARY_PATH": ld}


def _cluster_if(emu: Emulator) -> str:
    # wan0 carries the host's address when it is alone in its cluster, lan0 (the bridge)
    # otherwise; either way the route to the other cluster goes through wan0.
    return "wan0" if emu.link.hosts == 1 else "lan0"


def run(emu: Emulator, job: MpiJob) -> dict:
    """Run the job on an emulator built with ``management=True``; return a record: exit_code,
    seconds, stdout, stderr, and the bytes that entered the link each way during the run
    (``wan_bytes_ab``, ``wan_bytes_ba``). A program that fails is a UserError (one line)."""
    job = job.validated(emu.link.hosts)
    binary = launcher(job.library)
    argv = resolve_program(job.argv)
    job = MpiJob(**{**job.__dict__, "argv": argv})
    hosts = rank_hosts(emu, job.ranks_per_cluster, job.placement)
    # The launcher's environment (ip, mpirun/mpiexec, the agent or wrapper, orted): never the
    # job's --env, which is for the ranks only (--env PATH=... or LD_PRELOAD=... must not reach ip).
    env = {**os.environ, **emu.env()}
    pkg_root = str(Path(__file__).resolve().parents[2])  # ranks import longhaul.mpi from this checkout
    env["PYTHONPATH"] = _search_path(pkg_root, env.get("PYTHONPATH", ""))
    # The ranks' own variables: the job's --env, with this checkout first on a PYTHONPATH it gives.
    rank_env = dict(job.env)
    if "PYTHONPATH" in rank_env:
        rank_env["PYTHONPATH"] = _search_path(pkg_root, rank_env["PYTHONPATH"])
    script = emu.state_dir / ("agent.sh" if job.library == "openmpi" else "wrapper.sh")
    script.write_text(_AGENT if job.library == "openmpi" else _WRAPPER)
    script.chmod(0o755)
    if job.library == "openmpi":
        hostfile = emu.state_dir / "hostfile"
        hostfile.write_text("".join(f"{h} slots=1\n" for h in hosts))
        if os.geteuid() == 0:  # Open MPI refuses root unless told twice (emulation needs root)
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        # PATH and PYTHONPATH are passed to the ranks explicitly, as a remote launch would need.
        rank_env = {"PATH": env.get("PATH", os.defpath), "PYTHONPATH": env["PYTHONPATH"], **rank_env}
        cmd = openmpi_command(emu, job, binary, script, hostfile, rank_env)
    else:
        libdirs = _mpich_libdirs(emu, job)
        env.update(_mpich_env(emu, job, hosts, libdirs))
        if "LD_LIBRARY_PATH" in rank_env:  # the MPI library's directories stay first
            rank_env["LD_LIBRARY_PATH"] = _search_path(*libdirs, rank_env["LD_LIBRARY_PATH"])
        rank_env_file = emu.state_dir / "rank-env.sh"
        rank_env_file.write_text("".join(f"export {k}={shlex.quote(str(v))}\n" for k, v in rank_env.items()))
        env["LONGHAUL_RANK_ENV"] = str(rank_env_file)
        cmd = mpich_command(emu, job, binary, script)
    before = _wan_bytes(emu)
    started = time.monotonic()
    try:
        p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    except OSError as e:
        raise UserError(f"cannot start the MPI launcher ({' '.join(cmd[:4])} {Path(binary).name}): "
                        f"{e.filename or cmd[0]}: {e.strerror or e}") from None
    try:
        out, err = p.communicate(timeout=job.timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise UserError(f"MPI program '{_program_name(argv)}' did not finish within --timeout-s {job.timeout_s:g} s") from None
    seconds = time.monotonic() - started
    after = _wan_bytes(emu)
    if p.returncode != 0:
        raise UserError(f"MPI program '{_program_name(argv)}' failed ({Path(binary).name} exit status {p.returncode}): "
                        f"{_last_error(err + out)}")
    return {"exit_code": p.returncode, "seconds": round(seconds, 3), "stdout": out, "stderr": err,
            "ranks": 2 * job.ranks_per_cluster, "placement": job.placement, "mpi": job.library,
            "wan_bytes_ab": after["ab"] - before["ab"], "wan_bytes_ba": after["ba"] - before["ba"]}


def _last_error(text: str) -> str:
    """What went wrong, in one line: the rank's exit code or signal from Open MPI's report, and
    the program's own last error line (e.g. a Python exception) when it printed one."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("----")]
    parts = []
    code = next((ln.split(":", 1)[1].strip() for ln in lines
                 if ln.startswith(("Exit code:", "=   EXIT CODE:"))), None)  # Open MPI, hydra
    if code is not None:
        parts.append(f"a rank exited with code {code}")
    parts += [ln for ln in lines if "exited on signal" in ln or "EXIT STRING" in ln][:1]
    parts += [ln for ln in lines if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", ln)][-1:]
    return "; ".join(parts)[:300] if parts else (lines[-1][:300] if lines else "it printed no error message")


def _program_name(argv: list[str]) -> str:
    """What the user would call the program: the script, not the interpreter running it."""
    name = Path(argv[0]).name
    if name.startswith("python") and len(argv) > 1:
        if argv[1] == "-m":
            return " ".join(argv[1:3])
        return f"{name} -c" if argv[1] == "-c" else Path(argv[1]).name
    return name


def emulator(link, name: str | None = None) -> Emulator:
    """An emulator with the management namespace the launcher needs (one link: the MPI libraries'
    TCP transports are bound to the cluster interface, wan0 with one host per cluster)."""
    if link.links > 1:
        raise UserError(f"path.wan_links: {link.links} links; emu mpi runs over one link (valid: 1)")
    return Emulator(link, name=name, management=True)
