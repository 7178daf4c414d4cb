"""A pooled SSH connection closed by another thread between the pool handing it out and its use (pool.discard after a
failed command): the caller meets the kind's own errors (a retry, ClusterUnreachable, BackendError), never an
AttributeError on the missing transport."""

from types import SimpleNamespace

import paramiko
import pytest

from clusters.backends import BackendError, ssh, terminal
from clusters.backends.base import ClusterUnreachable

CLUSTER = SimpleNamespace(display_name="Lab")


def closed_client(cluster, account) -> paramiko.SSHClient:
    return paramiko.SSHClient()  # get_transport() is None, as after close()


def test_sftp_over_a_connection_closed_meanwhile_retries_then_says_unreachable(monkeypatch):
    handed, dropped = [], []
    monkeypatch.setattr(
        ssh.pool, "client", lambda cluster, account: handed.append(1) or closed_client(cluster, account)
    )
    monkeypatch.setattr(ssh.pool, "discard", lambda cluster, account: dropped.append(1))
    with pytest.raises(ClusterUnreachable), ssh.sftp(CLUSTER, object(), server=["sudo", "sftp-server"]):
        pass
    assert (len(handed), len(dropped)) == (2, 1)


def test_terminal_over_a_connection_closed_meanwhile_is_a_backend_error(monkeypatch):
    monkeypatch.setattr(ssh.pool, "client", closed_client)
    login = SimpleNamespace(auth_method="password")  # ssh is never given a password: the paramiko path
    with pytest.raises(BackendError, match="Could not open a terminal"):
        terminal.open_terminal(CLUSTER, login, ["bash", "-l"], cols=80, rows=24)
