"""The link emulator's part (``longhaul.emu.study_part``), when the emulator provides one."""

from __future__ import annotations

import importlib

from longhaul.study import PartResult, SkipPart, StudyContext, StudyPart


def run(ctx: StudyContext) -> PartResult:
    try:
        emu = importlib.import_module("longhaul.emu")
    except Exception as err:  # noqa: BLE001 - the part is skipped, saying why
        raise SkipPart(f"the link emulator's study part is not available ({type(err).__name__}: {err})") from None
    fn = getattr(emu, "study_part", None)
    if fn is None:
        raise SkipPart("longhaul.emu has no study_part(ctx) yet")
    return fn(ctx)


PART = StudyPart("emulated", "Link emulator", run, order=95)
