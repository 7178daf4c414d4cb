"""A Kubernetes API server for tests and benchmarks: kmock's emulator behind a small HTTP(S) front.

kmock stores objects and serves create/get/list/patch/delete the way the API server does. The front adds
what the portal uses and kmock 0.8 does not serve, each as the real API server behaves:
    - /version, and Namespaces (cluster-scoped, which kmock's path parser cannot take);
    - equality label selectors on lists (kmock returns every object);
    - SelfSubjectAccessReview answers, and 403 Forbidden for verbs an admin "denied" (see /_emulator/config);
    - pod logs per container with limitBytes, written by the test in the kubelet's place;
    - the service proxy, forwarded to a real HTTP server the test registers for the Service (HTTP and WebSockets),
      with the API server's rewriting of absolute links in HTML pages and Location headers;
    - exec into a pod: a WebSocket (v5/v4.channel.k8s.io) to a real local process, as a kubelet runs one
      (tests/k8s_kubelet.py);
    - creationTimestamp and uid on created objects, and a Secret's stringData stored as data.
There are no controllers: tests create pods and set statuses themselves, as a kubelet would. With --node, one node
of controllers, kubelet and kube-proxy runs beside the API server (tests/k8s_node.py): the bundled workloads' pods
run as local processes, and the service proxy reaches a Service that no test routed through its cluster IP. `make
demo` runs it that way, as its emulated Kubernetes cluster.

Authentication, with --client-ca (as kube-apiserver's --client-ca-file): a request is authenticated by a client
certificate that CA signed (TLS checks it; a certificate another CA signed fails the handshake) or by a bearer
token (any: tokens are not what the tests check); one with neither gets 401 Unauthorized, the service proxy and
exec included. Without --client-ca every request is taken, as before.

Control endpoints (loopback only, used by tests): POST /_emulator/config {"deny": ["create deployments"]},
POST /_emulator/logs/<ns>/<pod>/<container> (appends the body), POST /_emulator/upstreams/<ns>/<service>
{"url": …}, GET /_emulator/requests (and DELETE to clear).

With --kueue, the custom resources of Kueue, the Training Operator, KubeRay and AppWrapper are registered from the
CRD documents their projects publish (clusters/backends/kinds/kubernetes/crds/*.yaml, read here as an API server reads
CRDs), and a created object is refused (422 Invalid) unless it matches its version's openAPIV3Schema. Kueue's
controller is the test's to play (it writes Workload status); Kueue's visibility API (pendingworkloads of a
ClusterQueue or LocalQueue) answers from the order the test gives: POST /_emulator/pending/<clusterqueue>
{"workloads": [{"namespace", "name", "localQueueName", "priority"}, …]}, first to be admitted first.

Run: python -m tests.k8s_emulator --port 0 [--tls-cert c.pem --tls-key k.pem [--client-ca ca.pem]] [--mpi]
[--kueue] [--node STATE_DIR [--python WORKLOADS_PYTHON]]; it prints "listening URL".
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import re
import signal
import ssl
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import jsonschema
import kmock
import yaml
from aiohttp import web
from multidict import CIMultiDict

from tests import k8s_kubelet, k8s_node

SERVED = [
    "v1/pods",
    "v1/services",
    "v1/persistentvolumeclaims",
    "v1/configmaps",
    "v1/secrets",
    "v1/resourcequotas",
    "v1/limitranges",
    "apps/v1/deployments",
    "batch/v1/jobs",
    "autoscaling/v2/horizontalpodautoscalers",
    "networking.k8s.io/v1/ingresses",
    "metrics.k8s.io/v1beta1/pods",
    "metrics.k8s.io/v1beta1/nodes",
]
MPI = "kubeflow.org/v2beta1/mpijobs"
CRDS = Path(__file__).resolve().parents[1] / "clusters/backends/kinds/kubernetes/crds"
VISIBILITY = ["visibility.kueue.x-k8s.io/v1beta1/clusterqueues", "visibility.kueue.x-k8s.io/v1beta1/localqueues"]


def custom_resources() -> dict[str, dict]:
    """group/version/plural → the openAPIV3Schema of that version, from the published CRD documents."""
    schemas = {}
    for path in sorted(CRDS.glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            spec = crd["spec"]
            for version in spec["versions"]:
                schema = strip_extensions(version["schema"]["openAPIV3Schema"])
                schemas[f"{spec['group']}/{version['name']}/{spec['names']['plural']}"] = schema
    return schemas


def strip_extensions(node):
    """The schema as JSON Schema: Kubernetes' x-kubernetes-* markers dropped (int-or-string keeps its anyOf)."""
    if isinstance(node, dict):
        return {k: strip_extensions(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    if isinstance(node, list):
        return [strip_extensions(v) for v in node]
    return node


VERSION = {  # every field of the published VersionInfo type (the official client requires each)
    "major": "1",
    "minor": "34",
    "gitVersion": "v1.34.1",
    "gitCommit": "93248f9ae092f571eb870b7664c534bfc7d00f03",
    "gitTreeState": "clean",
    "buildDate": "2025-09-09T19:44:50Z",
    "goVersion": "go1.24.6",
    "compiler": "gc",
    "platform": "linux/amd64",
}
PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>.+))?$"
)
# Not relayed by the service proxy: the client's credentials for the API server, and hop-by-hop headers.
HOP_BY_HOP = {"authorization", "host", "connection", "upgrade", "keep-alive", "transfer-encoding", "te", "trailer"}
VERBS = {"GET": "get", "POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}


# The service proxy's HTML rewriting (k8s.io/apimachinery/pkg/util/proxy/transport.go): absolute paths in URL
# attributes (its atomsToAttrs table; these are the ones pages use) and in Location get the proxy's prefix.
URL_ATTRIBUTE = re.compile(r"""(\b(?:href|src|action|formaction|poster|cite|data|manifest)=["'])(/[^"']*)""")


def prefixed(url: str, prefix: str) -> str:
    """An absolute path on the proxied server, as the browser must ask the API server for it."""
    if not url.startswith("/") or url.startswith("//") or url.startswith(prefix + "/"):
        return url
    return prefix + url


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code: int, reason: str, message: str) -> web.Response:
    body = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code, "reason": reason}
    return web.json_response({**body, "metadata": {}, "message": message}, status=code)


def selector_matches(selector: str, labels: dict) -> bool:
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


class Front:
    def __init__(self, emulator: kmock.KubernetesEmulator, *, authenticate: bool = False):
        self.emulator = emulator
        self.authenticate = authenticate
        self.namespaces: dict[str, dict] = {}
        self.deny: set[str] = set()
        self.logs: dict[tuple[str, str, str], bytearray] = defaultdict(bytearray)
        self.upstreams: dict[tuple[str, str], str] = {}
        self.requests: list[str] = []
        self.session: aiohttp.ClientSession | None = None
        self.node: k8s_node.Node | None = None
        self.schemas: dict[str, dict] = {}  # group/version/plural → openAPIV3Schema (--kueue)
        self.pending: dict[str, list[dict]] = {}  # ClusterQueue → its pending workloads, first to be admitted first

    # -- control ----------------------------------------------------------------------------------------------
    async def control(self, request: web.Request) -> web.StreamResponse:
        parts = request.path.strip("/").split("/")[1:]
        if parts == ["config"]:
            config = await request.json()
            self.deny = set(config.get("deny", []))
            return web.json_response({"deny": sorted(self.deny)})
        if parts[:1] == ["logs"] and len(parts) == 4:
            self.logs[tuple(parts[1:])] += await request.read()
            return web.json_response({"bytes": len(self.logs[tuple(parts[1:])])})
        if parts[:1] == ["upstreams"] and len(parts) == 3:
            self.upstreams[(parts[1], parts[2])] = (await request.json())["url"]
            return web.json_response({"ok": True})
        if parts[:1] == ["pending"] and len(parts) == 2:
            self.pending[parts[1]] = (await request.json())["workloads"]
            return web.json_response({"ok": True})
        if parts == ["requests"]:
            if request.method == "DELETE":
                self.requests.clear()
            return web.json_response(self.requests)
        return status(404, "NotFound", "no such control endpoint")

    # -- API --------------------------------------------------------------------------------------------------
    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        if request.path.startswith("/_emulator/"):
            return await self.control(request)
        if self.authenticate and not self.user(request):
            return status(401, "Unauthorized", "Unauthorized")
        self.requests.append(f"{request.method} {request.path_qs}")
        if request.path.rstrip("/") == "/version":
            return web.json_response(VERSION)
        match = PATH.match(request.path)
        if match is None:
            return await self.served(request)
        parts = match.groupdict()
        group = parts["group"] or ""
        plural, name, sub = parts["plural"], parts["name"], parts["sub"]
        if plural == "namespaces" and parts["namespace"] is None:
            # /api/v1/namespaces[/name] itself, as opposed to objects inside a namespace.
            return await self.namespace_api(request, name)
        if plural == "selfsubjectaccessreviews":
            return await self.access_review(request)
        verb = "create" if sub == "exec" else self.verb(request, name, sub)  # exec is `create pods/exec`
        resource = f"{plural}/{sub}" if sub and sub not in {"status"} and not sub.startswith("proxy") else plural
        if sub and sub.startswith("proxy"):
            resource = f"{plural}/proxy"
        if f"{verb} {resource}" in self.deny:
            where = f' in the namespace "{parts["namespace"]}"' if parts["namespace"] else " at the cluster scope"
            return status(
                403,
                "Forbidden",
                f'{plural}{"." + group if group else ""} is forbidden: User "system:serviceaccount:gpulab:portal" '
                f'cannot {verb} resource "{resource}" in API group "{group}"{where}',
            )
        namespace = parts["namespace"]
        if request.method == "POST" and namespace and namespace not in self.namespaces:
            return status(404, "NotFound", f'namespaces "{namespace}" not found')
        if sub == "pendingworkloads" and group == "visibility.kueue.x-k8s.io":
            return self.pending_workloads(namespace, plural, name)
        invalid = await self.invalid(request, f"{group}/{parts['version']}/{plural}", name)
        if invalid is not None:
            return invalid
        if plural == "pods" and sub == "log":
            return self.pod_log(request, namespace, name)
        if plural == "pods" and sub == "exec":
            return await self.exec(request, namespace, name)
        if plural == "services" and sub and sub.startswith("proxy"):
            return await self.proxy(request, namespace, name, sub[len("proxy") :])
        response = await self.served(request)
        if request.method == "GET" and name is None and "labelSelector" in request.query:
            response = self.filter_list(response, request.query["labelSelector"])
        if request.method == "POST" and name is None and response.status in (200, 201):
            self.stamp(match, response)
        return response

    async def served(self, request: web.Request) -> web.StreamResponse:
        """kmock's answer. kmock keeps every request it served and matches each new one against all of them, so a
        call would cost time in proportion to the calls before it (0.8 s after 700): each is forgotten once served
        (this front counts calls itself, in `requests`)."""
        try:
            return await self.emulator(request)
        finally:
            history = self.emulator._requests
            history[:] = [served for served in history if served._raw_request is not request]

    @staticmethod
    def user(request: web.Request) -> str:
        """Who the request signs in as: the client certificate's CN (TLS verified it against --client-ca), or the
        bearer token's holder; "" for nobody."""
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        for rdn in (peer or {}).get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    return value
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        return "token" if scheme.lower() == "bearer" and token.strip() else ""

    @staticmethod
    def verb(request: web.Request, name: str | None, sub: str | None) -> str:
        if request.method == "GET" and name is None:
            return "watch" if request.query.get("watch") == "true" else "list"
        return VERBS.get(request.method, request.method.lower())

    async def namespace_api(self, request: web.Request, name: str | None) -> web.StreamResponse:
        verb = self.verb(request, name, None)
        if f"{verb} namespaces" in self.deny:
            return status(
                403,
                "Forbidden",
                'namespaces is forbidden: User "system:serviceaccount:gpulab:portal" cannot '
                f'{verb} resource "namespaces" in API group "" at the cluster scope',
            )
        if request.method == "POST":
            body = await request.json()
            ns = body.get("metadata", {}).get("name")
            if ns in self.namespaces:
                return status(409, "AlreadyExists", f'namespaces "{ns}" already exists')
            body.setdefault("metadata", {}).update(creationTimestamp=now(), uid=str(uuid.uuid4()))
            body["status"] = {"phase": "Active"}
            self.namespaces[ns] = body
            return web.json_response(body, status=201)
        if request.method == "GET" and name is None:
            return web.json_response(
                {"kind": "NamespaceList", "apiVersion": "v1", "items": [*self.namespaces.values()]}
            )
        if name not in self.namespaces:
            return status(404, "NotFound", f'namespaces "{name}" not found')
        if request.method == "GET":
            return web.json_response(self.namespaces[name])
        if request.method == "PATCH":
            patch = await request.json()
            labels = patch.get("metadata", {}).get("labels") or {}
            self.namespaces[name]["metadata"].setdefault("labels", {}).update(labels)
            return web.json_response(self.namespaces[name])
        if request.method == "DELETE":
            return web.json_response(self.namespaces.pop(name))
        return status(405, "MethodNotAllowed", "not supported")

    async def access_review(self, request: web.Request) -> web.Response:
        review = await request.json()
        attrs = review.get("spec", {}).get("resourceAttributes", {})
        resource = attrs.get("resource", "") + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
        allowed = f"{attrs.get('verb')} {resource}" not in self.deny
        review["status"] = {"allowed": allowed, **({} if allowed else {"reason": "no RBAC rule allows it"})}
        return web.json_response(review, status=201)

    async def invalid(self, request: web.Request, resource: str, name: str | None) -> web.Response | None:
        """A create of a custom resource that does not match its published schema: 422, as the API server refuses."""
        schema = self.schemas.get(resource)
        if schema is None or request.method != "POST" or name is not None:
            return None
        body = await request.json()
        error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(schema).iter_errors(body))
        if error is None:
            return None
        path = ".".join(str(p) for p in error.absolute_path)
        kind = body.get("kind", "object")
        return status(
            422, "Invalid", f'{kind} "{(body.get("metadata") or {}).get("name")}" is invalid: {path}: {error.message}'
        )

    def pending_workloads(self, namespace: str | None, plural: str, name: str) -> web.Response:
        """Kueue's PendingWorkloadsSummary of a ClusterQueue, or of a LocalQueue in `namespace`, positions from 0."""
        items = []
        for cluster_queue, workloads in self.pending.items():
            in_local: dict[tuple[str, str], int] = defaultdict(int)
            for position, workload in enumerate(workloads):
                local = (workload["namespace"], workload["localQueueName"])
                item = {
                    "metadata": {"name": workload["name"], "namespace": workload["namespace"]},
                    "priority": workload.get("priority", 0),
                    "localQueueName": workload["localQueueName"],
                    "positionInClusterQueue": position,
                    "positionInLocalQueue": in_local[local],
                }
                in_local[local] += 1
                if (plural == "clusterqueues" and cluster_queue == name) or (
                    plural == "localqueues" and local == (namespace, name)
                ):
                    items.append(item)
        summary = {"kind": "PendingWorkloadsSummary", "apiVersion": "visibility.kueue.x-k8s.io/v1beta1"}
        return web.json_response({**summary, "metadata": {"creationTimestamp": None}, "items": items})

    def pod_log(self, request: web.Request, namespace: str, pod: str) -> web.StreamResponse:
        container = request.query.get("container", "")
        if self.stored("v1/pods", namespace, pod) is None:
            return status(404, "NotFound", f'pods "{pod}" not found')
        data = bytes(self.logs.get((namespace, pod, container), b""))
        if "limitBytes" in request.query:
            data = data[: int(request.query["limitBytes"])]
        return web.Response(body=data, content_type="text/plain")

    async def exec(self, request: web.Request, namespace: str, pod: str) -> web.StreamResponse:
        stored = self.stored("v1/pods", namespace, pod)
        if stored is None:
            return status(404, "NotFound", f'pods "{pod}" not found')
        return await k8s_kubelet.exec_in_pod(request, stored.raw)

    async def proxy(self, request: web.Request, namespace: str, service: str, rest: str) -> web.StreamResponse:
        """services/<name>:<port>/proxy/<path>, as the API server relays it: method, path, query, body and headers
        (less the client's Authorization, which the API server consumes), streamed; WebSocket upgrades relayed frame by
        frame."""
        upstream = self.upstreams.get((namespace, service.split(":")[0]))
        if upstream is None and self.node is not None:
            upstream = self.node.upstream(namespace, service)
        if upstream is None:
            return status(503, "ServiceUnavailable", f'no endpoints available for service "{service}"')
        assert self.session is not None
        target = upstream + (rest or "/") + (f"?{request.query_string}" if request.query_string else "")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return await self.proxy_socket(request, target, headers)
        prefix = request.path[: len(request.path) - len(rest)] if rest else request.path.rstrip("/")
        async with self.session.request(
            request.method, target, data=await request.read(), headers=headers, allow_redirects=False
        ) as answer:
            relayed = CIMultiDict(
                (name, prefixed(value, prefix) if name.lower() == "location" else value)
                for name, value in answer.headers.items()
                if name.lower() not in HOP_BY_HOP | {"content-length", "content-encoding"}
            )
            if answer.content_type == "text/html":  # the API server rewrites the page's links (not streamed)
                page = URL_ATTRIBUTE.sub(lambda m: m[1] + prefixed(m[2], prefix), await answer.text())
                return web.Response(status=answer.status, headers=relayed, body=page.encode())
            response = web.StreamResponse(status=answer.status, headers=relayed)
            await response.prepare(request)
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    async def proxy_socket(self, request: web.Request, target: str, headers: dict) -> web.StreamResponse:
        protocols = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        headers = {k: v for k, v in headers.items() if not k.lower().startswith("sec-websocket")}
        assert self.session is not None
        async with self.session.ws_connect(target.replace("http", "ws", 1), headers=headers, protocols=protocols) as up:
            down = web.WebSocketResponse(protocols=[up.protocol] if up.protocol else ())
            await down.prepare(request)

            async def relay(source, sink) -> None:
                async for message in source:
                    if message.type == aiohttp.WSMsgType.TEXT:
                        await sink.send_str(message.data)
                    elif message.type == aiohttp.WSMsgType.BINARY:
                        await sink.send_bytes(message.data)
                await sink.close()

            both = [asyncio.create_task(relay(up, down)), asyncio.create_task(relay(down, up))]
            await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
            for task in both:
                task.cancel()
            return down

    @staticmethod
    def filter_list(response: web.StreamResponse, selector: str) -> web.StreamResponse:
        if not isinstance(response, web.Response) or response.status != 200 or response.body is None:
            return response
        body = json.loads(response.body)
        items = body.get("items", [])
        body["items"] = [i for i in items if selector_matches(selector, (i.get("metadata") or {}).get("labels") or {})]
        return web.json_response(body)

    def stamp(self, match: re.Match, response: web.StreamResponse) -> None:
        if not isinstance(response, web.Response) or response.body is None:
            return
        meta = json.loads(response.body).get("metadata") or {}
        parts = match.groupdict()
        resource = f"{parts['core'] or parts['group'] + '/' + parts['version']}/{parts['plural']}"
        stored = self.stored(resource, parts["namespace"] or meta.get("namespace"), meta.get("name"))
        if stored is not None:
            stored.patch({"metadata": {"creationTimestamp": now(), "uid": str(uuid.uuid4())}})
            if parts["plural"] == "secrets" and stored.get("stringData"):  # stored as data, base64, as the API does
                data = {k: base64.b64encode(str(v).encode()).decode() for k, v in stored["stringData"].items()}
                stored.patch({"data": data, "stringData": None})
            response.body = json.dumps(stored.raw).encode()

    def stored(self, resource: str, namespace: str | None, name: str | None):
        try:
            obj = self.emulator.objects[resource, namespace, name]
        except KeyError:
            return None
        return None if obj.deleted else obj


@dataclass(frozen=True)
class NodeOptions:
    state: Path
    python: str


async def serve(
    port: int,
    tls: ssl.SSLContext | None,
    mpi: bool,
    authenticate: bool = False,
    node: NodeOptions | None = None,
    kueue: bool = False,
) -> None:
    emulator = kmock.KubernetesEmulator()
    schemas = custom_resources() if kueue else {}
    for resource in [*SERVED, *([MPI] if mpi else []), *schemas, *(VISIBILITY if kueue else [])]:
        emulator.resources[resource] = {}
    front = Front(emulator, authenticate=authenticate)
    front.schemas = schemas
    app = web.Application(client_max_size=16 * 2**20)
    app.router.add_route("*", "/{tail:.*}", front.dispatch)
    async with emulator, aiohttp.ClientSession() as session:
        front.session = session
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port, ssl_context=tls)
        await site.start()
        bound = runner.addresses[0][1]
        stopped = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(signum, stopped.set)
        running = None
        if node is not None:
            front.node = k8s_node.Node(emulator, front.logs, node.state, node.python, k8s_node.ROOT / "workloads")
            running = asyncio.create_task(front.node.run())
        print(f"listening {'https' if tls else 'http'}://127.0.0.1:{bound}", flush=True)
        await stopped.wait()
        if running is not None:  # the node stops its pods' processes
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--client-ca", help="authenticate requests: client certificates this CA signed, or a token")
    parser.add_argument("--mpi", action="store_true", help="serve the MPI Operator's MPIJob resource")
    parser.add_argument("--kueue", action="store_true", help="serve Kueue's and the operators' custom resources")
    parser.add_argument("--node", type=Path, help="run one node (tests/k8s_node.py), keeping its files here")
    parser.add_argument("--python", default=str(k8s_node.ROOT / "workloads/.venv/bin/python"), help="the pods' Python")
    args = parser.parse_args()
    tls = None
    if args.tls_cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            tls.verify_mode = ssl.CERT_OPTIONAL  # a certificate is checked when given; a token may sign in instead
            tls.load_verify_locations(args.client_ca)
    node = NodeOptions(args.node.resolve(), args.python) if args.node else None
    asyncio.run(serve(args.port, tls, args.mpi, authenticate=bool(args.client_ca), node=node, kueue=args.kueue))


if __name__ == "__main__":
    main()
