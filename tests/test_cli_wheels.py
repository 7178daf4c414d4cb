"""/cli/: the `gpulab` command served by the portal for labs without internet (portal/cli_wheels.py)."""

import hashlib
import subprocess
import sys

import pytest

from tests.integration.conftest import ROOT


@pytest.fixture
def wheel_dir(tmp_path, settings):
    folder = tmp_path / "wheels"
    folder.mkdir()
    settings.CLI_WHEELS_DIR = folder
    return folder


def test_the_page_says_how_to_install_from_this_portal_and_lists_the_wheels_with_their_hashes(client, wheel_dir):
    (wheel_dir / "gpulab_cli-0.1.0-py3-none-any.whl").write_bytes(b"client")
    (wheel_dir / "click-8.1.0-py3-none-any.whl").write_bytes(b"click")
    (wheel_dir / "notes.sh").write_text("echo not a wheel")
    (wheel_dir / "linked-1.0-py3-none-any.whl").symlink_to("/etc/passwd")
    page = client.get("/cli/")  # no sign-in: pip cannot sign in either
    assert page.status_code == 200
    text = page.content.decode()
    assert "pip install --user --no-index --find-links http://testserver/cli/wheels/ gpulab-cli" in text
    assert "gpulab login http://testserver --browser" in text
    index = client.get("/cli/wheels/").content.decode()
    digest = hashlib.sha256(b"click").hexdigest()
    assert f'href="click-8.1.0-py3-none-any.whl#sha256={digest}"' in index
    assert "gpulab_cli-0.1.0" in index and "notes.sh" not in index and "linked" not in index


@pytest.mark.parametrize("name", ["notes.sh", "linked-1.0-py3-none-any.whl", "..%2Fsecret-1-py3-none-any.whl"])
def test_only_the_wheels_of_the_folder_are_served(client, wheel_dir, name):
    (wheel_dir / "notes.sh").write_text("echo")
    (wheel_dir / "linked-1.0-py3-none-any.whl").symlink_to("/etc/passwd")
    (wheel_dir.parent / "secret-1-py3-none-any.whl").write_text("outside")
    assert client.get(f"/cli/wheels/{name}").status_code == 404


def test_an_unbuilt_folder_says_who_builds_it(client, settings, tmp_path):
    settings.CLI_WHEELS_DIR = tmp_path / "never-made"
    page = client.get("/cli/")
    assert page.status_code == 200 and b"scripts/cli_wheels.sh" in page.content
    assert client.get("/cli/wheels/").status_code == 200


def test_pip_downloads_the_client_through_the_portal_and_checks_its_hash(live_server, wheel_dir, tmp_path):
    wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheel_dir)]
    built = subprocess.run([*wheel, str(ROOT / "cli")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    fetched = tmp_path / "fetched"
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-index", "--isolated"]
    done = subprocess.run(
        [*pip, "--find-links", f"{live_server.url}/cli/wheels/", "--dest", str(fetched), "gpulab-cli"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    [got] = list(fetched.iterdir())
    assert got.read_bytes() == next(wheel_dir.glob("gpulab_cli-*.whl")).read_bytes()
