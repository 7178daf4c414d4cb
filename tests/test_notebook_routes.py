"""What the notebook proxy sends on each way to a server: straight to it (SLURM: the token as Jupyter's own
Authorization header) or through another proxy (Kubernetes: the API server's credentials, the token in the query,
its link rewriting taken out of pages and redirects)."""

from clusters.backends.kind import NotebookAddress
from sessions import notebook

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
