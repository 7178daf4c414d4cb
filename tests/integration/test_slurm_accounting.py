"""SLURM accounting on the local cluster: slurmdbd in front of MariaDB answers sacct, and Test connection sees it."""

from clusters.kinds import get_backend

from .conftest import slurm


def test_local_cluster_has_accounting_and_test_connection_says_so(cluster):
    assert "gpulab" in slurm("sacctmgr", "-n", "-P", "list", "cluster", "format=cluster")
    report = get_backend(cluster).test_connection()
    assert report.has_accounting is True
    assert "SLURM accounting: available (sacct)" in report.lines


def test_every_lab_user_is_registered_with_an_account(cluster, services):
    users = set(slurm("sacctmgr", "-n", "-P", "list", "assoc", "format=user").split())
    lab_users = {services["GPULAB_SERVICE_USER"], services["GPULAB_PERSONAL_USER"], services["GPULAB_SLURMREST_USER"]}
    assert lab_users | set(services["GPULAB_STUDENT_USERS"].split()) <= users
