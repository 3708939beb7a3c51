"""``longhaul emu``: real programs over an emulated long-haul link.

Two "clusters" (A and B) are network namespaces, N hosts each, joined by the userspace
data plane ``longhaul-wan`` (Rust, crates/longhaul-wan) that delays, paces, queues and
drops packets per direction. This package is the control plane:

- ``options``  : link parameters with physical units, validated (``LinkOptions``);
- ``system``   : privilege checks, the ``ip`` command, finding the data-plane binary;
- ``state``    : per-run names and state directories, ``clean`` of dead runs;
- ``topology`` : the ``Emulator`` context manager (build, start, tear down);
- ``reaper``   : a watcher that tears a run down if its controller is killed;
- ``run``      : ``A: CMD :: B: CMD`` command lines;
- ``bench``    : ``tcp()`` and ``ping()`` benchmarks returning flat records;
- ``scenario`` : the simulator's TCP scenario files (TOML/JSON) mapped onto the emulator.
"""

from longhaul.emu.options import LinkOptions  # noqa: F401
from longhaul.emu.study import study_part  # noqa: F401
