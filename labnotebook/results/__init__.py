"""The results: their format (``format.py``, with its migrations), the files (``store.py``),
what a result is keyed on (``keys.py``, ``machine.py``), whether it is fresh (``freshness.py``),
``--check`` (``audit.py``), ``--rekey`` and ``--summary``, and the figures derived from stored
rows (``metrics.py``) and the rule that compares them (``noise.py``). No GPU here."""
