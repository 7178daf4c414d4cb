"""A fake at the backend interface, for unit tests of the jobs app. It is not SLURM and no test says it is."""

from __future__ import annotations

import itertools
import uuid

from clusters.backends.base import (
    ClusterBackend,
    ClusterUnreachable,
    ConnectionReport,
    LogChunk,
    NodeInfo,
    NotSupported,
    SchedulerStatus,
    SubmitRequest,
)
from clusters.backends.slurm_family.reservations import HeldReservation, ReservationRefused, ReservationRequest


class FakeBackend(ClusterBackend):
    kind = "slurm"
    submitted: dict[str, uuid.UUID] = {}  # scheduler id → portal job id
    statuses: dict[str, SchedulerStatus] = {}
    logs: dict[uuid.UUID, str] = {}
    job_files: dict[tuple[uuid.UUID, str], str] = {}  # (portal job id, name) → what the job wrote in its directory
    nodes_of: dict[str, list[str]] = {}  # scheduler id → the nodes it holds
    node_addresses: dict[str, str] = {}  # node name → its address as the scheduler records it (NodeAddr)
    files_unreadable = (
        ""  # set: read_job_file refuses with these words (a cluster whose job files the portal cannot read)
    )
    poll_calls: list[list[str]] = []
    usages: dict = {}  # scheduler id → AccountedUsage, what accounting answers for it
    usage_calls: list[list[str]] = []
    cancelled: list[str] = []
    requests: list[SubmitRequest] = []
    reservations: dict[str, HeldReservation] = {}  # name → what the fake holds
    reservation_calls: list[str] = []  # "create NAME", "delete NAME"
    refuse_reservations = ""  # set: create_reservation refuses with these words
    down = False
    _ids = itertools.count(1000)

    @classmethod
    def reset(cls) -> None:
        cls.submitted, cls.statuses, cls.logs, cls.poll_calls, cls.cancelled = {}, {}, {}, [], []
        cls.usages, cls.usage_calls, cls.requests = {}, [], []
        cls.reservations, cls.reservation_calls, cls.refuse_reservations = {}, [], ""
        cls.down, cls.job_files, cls.nodes_of, cls.files_unreadable = False, {}, {}, ""
        cls.node_addresses = {}

    def _check(self) -> None:
        if FakeBackend.down:
            raise ClusterUnreachable("The fake cluster is down.")

    def submit(self, request: SubmitRequest) -> str:
        self._check()
        scheduler_id = str(next(self._ids))
        FakeBackend.submitted[scheduler_id] = request.job_id
        FakeBackend.requests.append(request)
        return scheduler_id

    def find_submitted(self, request):
        self._check()
        return next((sid for sid, jid in FakeBackend.submitted.items() if jid == request.job_id), None)

    def poll(self, scheduler_ids):
        self._check()
        FakeBackend.poll_calls.append(list(scheduler_ids))
        return {sid: FakeBackend.statuses[sid] for sid in scheduler_ids if sid in FakeBackend.statuses}

    def usage(self, scheduler_ids):
        self._check()
        FakeBackend.usage_calls.append(list(scheduler_ids))
        return {sid: FakeBackend.usages[sid] for sid in scheduler_ids if sid in FakeBackend.usages}

    def cancel(self, scheduler_id):
        self._check()
        FakeBackend.cancelled.append(scheduler_id)

    def read_job_file(self, job_id, name, offset, limit):
        self._check()
        if FakeBackend.files_unreadable:
            raise NotSupported(FakeBackend.files_unreadable)
        text = FakeBackend.job_files.get((job_id, name))
        if text is None:
            return LogChunk(offset=0, data="", eof=True, exists=False)
        return LogChunk(offset=len(text), data=text[offset : offset + limit], eof=True)

    def job_nodes(self, scheduler_id):
        self._check()
        return FakeBackend.nodes_of.get(scheduler_id, [])

    def nodes(self):
        self._check()
        return [
            NodeInfo(name, address, gpus=1, state="ALLOCATED") for name, address in FakeBackend.node_addresses.items()
        ]

    def read_log(self, job_id, offset, limit, *, scheduler_id="", stream=""):
        data = FakeBackend.logs.get(job_id, "").encode()
        offset = min(offset, len(data))
        chunk = data[offset : offset + limit]
        return LogChunk(offset=offset + len(chunk), data=chunk.decode(), eof=offset + len(chunk) >= len(data))

    def create_reservation(self, request: ReservationRequest) -> HeldReservation:
        self._check()
        FakeBackend.reservation_calls.append(f"create {request.name}")
        if FakeBackend.refuse_reservations:
            raise ReservationRefused(FakeBackend.refuse_reservations)
        held = HeldReservation(name=request.name, nodes="fake01", gpus=4)
        FakeBackend.reservations[request.name] = held
        return held

    def find_reservation(self, name: str) -> HeldReservation | None:
        self._check()
        return FakeBackend.reservations.get(name)

    def delete_reservation(self, name: str) -> None:
        self._check()
        FakeBackend.reservation_calls.append(f"delete {name}")
        FakeBackend.reservations.pop(name, None)

    def test_connection(self):
        return ConnectionReport(ok=True, lines=["fake"])

    def stage_lab_files(self, source):
        return 0
