"""The build: ``build_results.py``'s command line, planning which experiments run where,
scheduling them over a node's GPUs, the compute-sanitizer and Nsight Compute passes, judging a
run by the failure policy and writing its record. Everything here runs on the host; what runs
on a GPU is in ``labnotebook.run``."""
