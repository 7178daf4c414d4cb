"""`manage.py collect_telemetry`: stream GPU, disk, CPU and trainer telemetry from every cluster to the pages."""

import asyncio
import logging

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
        try:
            asyncio.run(collector.run(seconds=seconds))
        except KeyboardInterrupt:
            collector.stop.set()
