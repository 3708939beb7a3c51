"""``longhaul compare``: the same scenario in the simulator and through the emulator (or on
real hardware), side by side. One module per comparison, each with ``register(subparsers)``
(discovered by ``longhaul.commands.compare``)."""
