"""`manage.py collect_telemetry`: stream GPU, disk, CPU and trainer telemetry from every cluster to the pages."""

import asyncio
import logging
import signal

from django.core.management.base import BaseCommand

from telemetry.collector.run import Collector


class Command(BaseCommand):
    help = "Run the telemetry collector (a long-running process; one per site, or one per group of clusters)."

    def add_arguments(self, parser):
        parser.add_argument("--cluster", action="append", default=[], help="Only this cluster (repeatable).")
        parser.add_argument("--seconds", type=float, default=None, help="Stop after this long (tests, benchmarks).")

    def handle(self, *args, cluster, seconds, **options):
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        collector = Collector(cluster)
        # A stop (SIGTERM from a supervisor, Ctrl-C) ends the loop at its next tick, which stores the open series.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: collector.stop.set())
        try:
            asyncio.run(collector.run(seconds=seconds))
        except KeyboardInterrupt:
            collector.stop.set()
