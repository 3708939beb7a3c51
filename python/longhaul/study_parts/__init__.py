"""The study's parts, one module each: a module that defines ``PART = StudyPart(name, title, run,
order)`` is found by ``longhaul.study`` when the study starts (docs/explanation/study-report.md)."""
