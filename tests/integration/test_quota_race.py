"""The quota holds when one student fires many launches at once (PostgreSQL row locks, real threads)."""

import threading

from django.db import connection

from jobs.access import LaunchRefused
from jobs.launch import launch
from jobs.models import Job


def test_simultaneous_launches_never_exceed_the_quota(services, alice, cluster, sleep_template, course):
    assert connection.vendor == "postgresql"
    course.max_concurrent_jobs = 3
    course.save()
    barrier = threading.Barrier(12)
    outcomes: list[str] = []

    def one_launch():
        try:
            barrier.wait()
            launch(alice, course=course, template=sleep_template, cluster=cluster, raw_params={"seconds": 1})
            outcomes.append("ok")
        except LaunchRefused:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=one_launch) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["ok"] * 3 + ["refused"] * 9
    assert Job.objects.filter(owner=alice).count() == 3
