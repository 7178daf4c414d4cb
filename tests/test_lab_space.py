"""A student's own files under the lab directory: one answer for the Files page and for job scripts
($GPULAB_FILES_DIR), in every identity mode; the script's export is one quoted word under the lab directory."""

import subprocess

import pytest

from clusters.backends.slurm_family.script.rendering import RenderContext, render_script
from clusters.choices import AuthMethod
from clusters.lab_space import files_subdir
from clusters.models import ClusterAccount


@pytest.mark.parametrize(
    ("lab_dir", "method", "own", "expected"),
    [
        ("~/gpulab", AuthMethod.KEY, False, "students/user-{pk}"),  # the shared service account
        ("~/gpulab", AuthMethod.KEY, True, ""),  # the student's registered account: its own lab directory
        ("~/gpulab", AuthMethod.VIA_SERVICE, True, ""),  # their user through sudo / slurmrestd: in their home
        ("/srv/gpulab", AuthMethod.VIA_SERVICE, True, "students/jalice"),  # a lab directory all students share
    ],
)
def test_a_student_s_files_lie_where_their_identity_keeps_them(cluster, alice, lab_dir, method, own, expected):
    cluster.lab_dir = lab_dir
    account = ClusterAccount(cluster=cluster, user=alice if own else None, username="jalice", auth_method=method)
    assert files_subdir(cluster, account, alice) == expected.format(pk=alice.pk)


def test_the_script_exports_the_student_s_files_directory_under_the_lab_directory(tmp_path):
    ctx = RenderContext(job_id="j", job_name="n", lab_dir=str(tmp_path), files_subdir="students/user-7")
    script = render_script('echo "$GPULAB_FILES_DIR"', [], {}, ctx)
    printed = subprocess.run(["bash", "-c", script], capture_output=True, text=True)  # #SBATCH lines are comments
    assert printed.stdout.strip().endswith(f"{tmp_path}/students/user-7")
