"""Named pauses for fault-injection tests, e.g. FAILPOINTS="submit.after_sbatch=20" sleeps 20 s at that point.

A test uses one to hold a worker inside a race window (between sbatch and recording its id) and kill it there.
Unset in production, where `pause()` returns at once.
"""

import time

from django.conf import settings


def pause(name: str) -> None:
    for entry in settings.GPULAB_FAILPOINTS.split(","):
        point, _, seconds = entry.partition("=")
        if point.strip() == name:
            time.sleep(float(seconds or 0))
