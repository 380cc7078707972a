"""The MkDocs side: the macros a page calls (``macros.py``), what they know of the results
(``views.py``, ``context.py``), and how numbers become tables, charts, claims and markers. It reads
the committed results and never touches a GPU."""
