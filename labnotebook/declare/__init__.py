"""What an experiment declares: its kernels, cases, inputs, reference, tolerance and baselines
(``experiment.py``); where experiments are found and how a declaration is loaded
(``discover.py``); a new one in its simplest shape (``scaffold.py``, ``build_results.py new``)."""
