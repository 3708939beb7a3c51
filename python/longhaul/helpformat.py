"""The help formatter of every ``longhaul`` command."""

from __future__ import annotations

import argparse


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends an option's default to its help only when there is one to tell: options whose
    default is None take it from elsewhere (a scenario file, the benchmark, the profile) and say
    so in their own help text, as do options whose help already names the default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text.lower():
            return text
        return super()._get_help_string(action)
