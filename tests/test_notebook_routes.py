"""What the notebook proxy sends on each way to a server: straight to it (SLURM: the token as Jupyter's own
Authorization header) or through another proxy (Kubernetes: the API server's credentials, the token in the query,
its link rewriting taken out of pages and redirects; with a kubeconfig's client certificate, presented from the files
the cluster's client holds)."""

from dataclasses import replace

from clusters import kinds
from clusters.backends.kind import NotebookAddress
from sessions import notebook
from tests.integration.k8s import make_client_ca, make_client_certificate

DIRECT = NotebookAddress(url="http://node1:8888", token="t0ken-abcdefghijklmnop")
API = "https://k8s.example:6443/api/v1/namespaces/lab/services/gpulab-1:8888/proxy"
VIA_API_SERVER = NotebookAddress(
    url=API,
    token="t0ken-abcdefghijklmnop",
    headers={"Authorization": "Bearer cluster-credential"},
    token_in_query=True,
    ca_pem="",
    rewritten_prefix="/api/v1/namespaces/lab/services/gpulab-1:8888/proxy",
)


def test_a_server_reached_directly_gets_its_token_as_jupyters_authorization_header():
    assert notebook.upstream_headers(DIRECT) == {"Authorization": "token t0ken-abcdefghijklmnop"}
    assert notebook.upstream_query(DIRECT) == ""
    page = b'<script src="/jobs/1/lab/static/x.js">'
    assert notebook.unrewritten(page, DIRECT) == page


def test_through_the_api_server_the_portal_signs_in_to_it_and_sends_the_token_in_the_query():
    assert notebook.upstream_headers(VIA_API_SERVER) == {"Authorization": "Bearer cluster-credential"}
    assert notebook.upstream_query(VIA_API_SERVER) == "token=t0ken-abcdefghijklmnop"


def test_the_api_servers_rewritten_links_and_redirects_point_at_the_portals_path_again():
    prefix = VIA_API_SERVER.rewritten_prefix
    page = f'<script src="{prefix}/jobs/1/lab/static/x.js"></script><a href="/jobs/1/lab/tree">'.encode()
    assert notebook.unrewritten(page, VIA_API_SERVER) == (
        b'<script src="/jobs/1/lab/static/x.js"></script><a href="/jobs/1/lab/tree">'
    )
    assert notebook.unrewritten(f"{API}/jobs/1/lab/lab".encode(), VIA_API_SERVER) == b"/jobs/1/lab/lab"


def client_certificate(directory):
    _, key, name = make_client_ca(directory, "client-ca")
    return make_client_certificate(directory, (key, name), "gpulab-portal")


def test_with_a_client_certificate_the_portal_presents_its_files_and_no_header_carries_the_token(tmp_path):
    cert = client_certificate(tmp_path)
    found = replace(VIA_API_SERVER, headers={}, cert_file=str(cert.cert_file), key_file=str(cert.key_file))
    assert notebook.upstream_headers(found) == {}  # not Jupyter's token as an Authorization for the API server
    assert notebook.upstream_query(found) == "token=t0ken-abcdefghijklmnop"
    assert notebook.upstream_cert(found) == (str(cert.cert_file), str(cert.key_file))
    assert notebook.tls_context(found) is not None and notebook.tls_context(VIA_API_SERVER) is None
    assert "PRIVATE KEY" not in str(found.__dict__)  # what the cache keeps names the key's file, not the key


def test_a_kept_address_whose_certificate_files_are_gone_is_asked_again(
    monkeypatch, tmp_path, make_job, alice, settings
):
    """The files belong to the process whose client wrote them (gone, or another worker's): ask the kind here."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    cert = client_certificate(tmp_path)
    asked = []

    def notebook_address(self, job):
        asked.append(job.pk)
        return replace(VIA_API_SERVER, headers={}, cert_file=str(cert.cert_file), key_file=str(cert.key_file))

    job = make_job(alice, seconds=60)
    monkeypatch.setattr(type(kinds.kind_of(job.cluster.kind)), "notebook_address", notebook_address)
    notebook.forget(job.pk)
    assert notebook.address(job).cert_file == str(cert.cert_file)
    assert notebook.address(job).key_file == str(cert.key_file) and len(asked) == 1  # kept
    cert.key_file.unlink()
    notebook.address(job)
    assert len(asked) == 2
