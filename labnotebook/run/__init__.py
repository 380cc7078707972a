"""The code that runs experiments on a GPU. Which of it a result is keyed on (the measurement
protocol in ``protocol/``, and the modules an experiment imports) is ``labnotebook/results/keys.py``'s
rule; the rest is provenance: editing it stales nothing."""
