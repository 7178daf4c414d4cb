"""Reading a kept log (jobs/kept_logs.py) from an offset, as the cluster's copy would be read."""

from jobs.kept_logs import read_kept
from jobs.models import KeptLog


def test_a_kept_log_reads_in_chunks_from_any_offset_and_says_where_it_was_cut(make_job, alice, settings):
    job = make_job(alice)
    assert read_kept(job, 0, 10) is None
    KeptLog.objects.create(job=job, data="épreuve 1\nloss 0.5\n", truncated=False)
    first = read_kept(job, 0, 2)  # "é" is two bytes: the chunk ends on a whole character
    assert (first.data, first.offset, first.eof) == ("é", 2, False)
    rest = read_kept(job, first.offset, 1000)
    assert rest.data == "preuve 1\nloss 0.5\n" and rest.eof
    assert read_kept(job, 10_000, 10).data == "" and read_kept(job, 10_000, 10).eof

    KeptLog.objects.filter(job=job).update(truncated=True)
    settings.GPULAB_KEPT_LOG_BYTES = 4096
    whole = read_kept(job, 0, 10_000).data
    assert whole.startswith("[The portal kept the last 4 KiB of this log; its beginning was cut.]\n")
    assert whole.endswith("loss 0.5\n")
