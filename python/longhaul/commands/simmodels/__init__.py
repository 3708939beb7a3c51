"""One module per model of ``longhaul sim``; each defines ``register(subparsers)`` like the verbs
in ``longhaul.commands`` (discovered, so adding a model never edits another file)."""
