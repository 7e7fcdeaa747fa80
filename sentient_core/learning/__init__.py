"""The chaperone-gated learning loop (SPEC §4).

curiosity → query → chaperone → ingest → integrate → judge → learn → reflect.
Only :mod:`sentient_core.learning.chaperone` (through ``llm``, ``fetch`` and
``offline``) touches the network or the file system on the learner's behalf.
"""
