"""``scenario-keys``: the tables and keys a model's scenario files hold, read from the model's front end
(``FILE_KEYS`` of ``longhaul.sim.<model>``), so the scenario reference lists what the code accepts."""

from __future__ import annotations

import importlib

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


class ScenarioKeys(SphinxDirective):
    """A bullet per table of the scenario file: ``[table]``: its keys, as the module spells them."""

    required_arguments = 1  # the module, e.g. longhaul.sim.verbs

    def run(self) -> list[nodes.Node]:
        module = importlib.import_module(self.arguments[0])
        tables: dict[str, list[str]] = {}
        for spelled in module.FILE_KEYS.values():
            table, _, key = spelled.rpartition(".")
            tables.setdefault(table, []).append(key)
        items = nodes.bullet_list()
        for table, keys in tables.items():
            para = nodes.paragraph()
            para += nodes.literal(text=f"[{table}]")
            para += nodes.Text(": ")
            for i, key in enumerate(keys):
                para += nodes.literal(text=key)
                if i + 1 < len(keys):
                    para += nodes.Text(", ")
            items += nodes.list_item("", para)
        return [items]


def setup(app):
    app.add_directive("scenario-keys", ScenarioKeys)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
