"""The results: their format (``format.py``, its rows ``rows.py``, read and written as JSON by
``codec.py``, older files brought up to date by ``migrations.py``), the files (``store.py``),
what a result is keyed on (``keys.py``, ``machine.py``), whether it is fresh (``freshness.py``),
``--check`` (``audit.py``), ``--rekey`` and ``--summary``, and the figures derived from stored
rows (``metrics.py``) and the rule that compares them (``noise.py``). No GPU here."""
