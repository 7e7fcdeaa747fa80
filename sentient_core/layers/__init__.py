"""Memory's layers (SPEC §6): episodic traces condense into semantic notes only once verified.

The layers, bottom up: **episodic** (the stored traces), **semantic** (condensed
notes, :mod:`.notes`, written by :mod:`.condense`), **procedural** (recipes),
**guards** (the scorer's vetoes) and **meta** (wisdom). A record moves up only
through its level's verification gate and carries the reason and the evidence;
nothing is deleted. :func:`~sentient_core.layers.view.layer_counts` counts them
all (``sentient layers``).
"""

from sentient_core.layers.condense import Condenser, CondenseReport, CondenseSettings, supported
from sentient_core.layers.notes import NOTES, NoteRecord, NoteSentence
from sentient_core.layers.recall import Answer, prefer_notes
from sentient_core.layers.view import LayerRow, layer_counts, layer_summary

__all__ = [
    "NOTES",
    "Answer",
    "CondenseReport",
    "CondenseSettings",
    "Condenser",
    "LayerRow",
    "NoteRecord",
    "NoteSentence",
    "layer_counts",
    "layer_summary",
    "prefer_notes",
    "supported",
]
