"""NVTX for the pretend GPU: the ranges open now, which the pretend driver notes beside each
launch the stand-in ncu would see."""

RANGES: list[str] = []


def push_range(message=None, **attributes):
    RANGES.append(message or "")


def pop_range(**attributes):
    RANGES.pop()
