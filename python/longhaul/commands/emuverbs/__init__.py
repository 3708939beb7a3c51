"""Parts of ``longhaul emu`` (a package: not a verb of its own): the link and store options its
verbs share, ``emu mpi``, and ``emu link``/``emu drill`` (failover)."""
