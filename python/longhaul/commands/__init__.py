"""One module per verb of the ``longhaul`` command; each defines ``register(subparsers)``.

``register`` adds its sub-parser and sets ``func`` (called with the parsed args, returns the
exit status). Verbs parse and print; the work is done in the library modules.
"""
