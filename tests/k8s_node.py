"""One node of the emulated cluster: the kubelet, the Deployment and Job controllers, the garbage collector and
kube-proxy, for the API server of tests/k8s_emulator.py (`--node`). `make demo` runs it, and so do the tests that
click through a server (deploy, Try it, scale, load test, logs, delete).

No container runtime can run here, so the kubelet runs a container's command as a local process, with the workloads'
Python in place of the image's: only the bundled images are known (IMAGES: their entrypoint, command and working
folder, with the image's /app being this checkout's workloads/). Each pod gets a loopback address of its own
(127.N.x.y, N picked at random per node, so that nodes of parallel test processes and a demo on one machine
do not collide), on which "0.0.0.0" in its arguments binds, so replicas listen on the same containerPort side by side;
a volume is a folder (a PersistentVolumeClaim's is shared by every pod of its namespace that names the claim); a
Service gets a cluster IP (127.N+1.x.y) where kube-proxy forwards each connection to the next ready pod, and the
cluster's DNS is played by writing the Service's cluster IP for its name into the container's arguments. A GPU
request stays Pending as Unschedulable: the emulated node has no GPUs. What this writes (pods, their status, the
workloads' status) follows the published API types, and the portal reads it through the API as on any cluster.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ctypes
import hashlib
import itertools
import logging
import os
import re
import secrets
import signal
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import kmock

logger = logging.getLogger("k8s-node")

NODE_NAME = "emulated-node"
ROOT = Path(__file__).resolve().parents[1]
PR_SET_PDEATHSIG = 1
RESTART_BACKOFF = 5.0  # seconds between a server container's exit and its restart


@dataclass(frozen=True)
class Image:
    """What a bundled image's Dockerfile sets: WORKDIR, ENTRYPOINT and CMD (its /app is workloads/)."""

    workdir: str
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...] = ()


ANY_ADDRESS = "0.0.0.0"  # noqa: S104 (a container's "every address", which the kubelet turns into the pod's)
IMAGES = {
    "gpulab/tinylm-server": Image(
        "/app/inference", ("python", "server.py"), ("--host", ANY_ADDRESS, "--port", "11434", "--checkpoint", "/models")
    ),
    "gpulab/tinylm-trainer": Image(
        "/app/trainer", ("python", "train.py"), ("--model", "tiny", "--run_dir", "/runs/latest")
    ),
}
SERVICE_NAME = re.compile(r"(?<=://)(?P<name>[a-z0-9]([-a-z0-9]*[a-z0-9])?)(?P<rest>(\.[a-z0-9-]+)*)(?=[:/]|$)")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def repository(image: str) -> str:
    """The image's repository, without registry or tag: docker.io/gpulab/tinylm-server:0.1.0-cpu → gpulab/…."""
    name = image.split("@", 1)[0]
    if ":" in name.rsplit("/", 1)[-1]:
        name = name.rsplit(":", 1)[0]
    parts = name.split("/")
    if len(parts) > 2 and ("." in parts[0] or ":" in parts[0]):
        parts = parts[1:]
    return "/".join(parts)


def _die_with_parent() -> None:
    """A pod's processes go when the node does, however it ends."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _address(network: int, n: int) -> str:
    return f"127.{network}.{n // 250}.{n % 250 + 1}"


def _condition(obj: dict, kind: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def _owner(obj: dict) -> dict:
    return next((o for o in (obj.get("metadata") or {}).get("ownerReferences") or [] if o.get("controller")), {})


@dataclass
class Container:
    name: str
    image: str
    process: asyncio.subprocess.Process | None = None
    pump: asyncio.Task | None = None
    started_at: str = ""
    ready: bool = False
    restarts: int = 0
    exit_code: int | None = None
    finished_at: str = ""
    ended: float = 0.0  # time.monotonic() at the exit, for the restart's back-off
    waiting: dict = field(default_factory=dict)


@dataclass
class Pod:
    namespace: str
    name: str
    uid: str
    ip: str
    containers: list[Container]
    restart: str
    started_at: str = field(default_factory=now)
    deleted: bool = False


class Node:
    def __init__(self, emulator: kmock.KubernetesEmulator, logs: dict, state: Path, python: str, workloads: Path):
        self.objects = emulator.objects
        self.logs = logs  # the API server's pod logs, (namespace, pod, container) → bytes
        self.state = state
        self.python = python
        self.workloads = workloads
        self.pods: dict[tuple[str, str], Pod] = {}
        self.proxies: dict[tuple[str, str, int], asyncio.Server] = {}
        self.turn = itertools.count()
        self.pod_ips = itertools.count()
        self.service_ips = itertools.count()
        self.network = secrets.choice(range(16, 250, 2))  # pods in 127.N.0.0/16, Services in 127.N+1.0.0/16
        self.session: aiohttp.ClientSession | None = None

    # -- the store --------------------------------------------------------------------------------------------
    def live(self, resource: str, namespace: str | None = None) -> list[tuple[str, dict]]:
        *group_part, version, plural = resource.split("/")
        group = group_part[0] if group_part else ""
        found = []
        for (res, ns, _name), obj in list(self.objects.items()):
            wanted = (res.group, res.version, res.plural) == (group, version, plural) and not obj.deleted
            if wanted and (namespace is None or ns == namespace):
                found.append((ns, obj.raw))
        return found

    def get(self, resource: str, namespace: str, name: str) -> dict | None:
        try:
            obj = self.objects[resource, namespace, name]
        except KeyError:
            return None
        return None if obj.deleted else obj.raw

    def patch(self, resource: str, namespace: str, name: str, changes: dict) -> None:
        with contextlib.suppress(KeyError):
            obj = self.objects[resource, namespace, name]
            if not obj.deleted:
                obj.patch(changes)

    def delete(self, resource: str, namespace: str, name: str) -> None:
        with contextlib.suppress(KeyError):
            obj = self.objects[resource, namespace, name]
            if not obj.deleted:
                obj.delete()

    # -- the loop ---------------------------------------------------------------------------------------------
    async def run(self) -> None:
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2))
        try:
            while True:
                try:
                    await self.reconcile()
                except Exception:
                    logger.exception("the emulated node's loop failed; it goes on")
                await asyncio.sleep(0.5)
        finally:
            await self.stop()

    async def stop(self) -> None:
        for key in list(self.pods):
            await self.kill(key)
        for server in self.proxies.values():
            server.close()
        if self.session is not None:
            await self.session.close()

    async def reconcile(self) -> None:
        self.collect_garbage()
        for namespace, deployment in self.live("apps/v1/deployments"):
            self.run_deployment(namespace, deployment)
        for namespace, job in self.live("batch/v1/jobs"):
            await self.run_job(namespace, job)
        await self.run_pods()
        await self.run_services()

    # -- controllers ------------------------------------------------------------------------------------------
    def collect_garbage(self) -> None:
        """Delete pods whose controller is gone, as the garbage collector does after a cascading delete."""
        for namespace, pod in self.live("v1/pods"):
            owner = _owner(pod)
            resource = {"Deployment": "apps/v1/deployments", "Job": "batch/v1/jobs"}.get(owner.get("kind", ""))
            if resource is None:
                continue
            found = self.get(resource, namespace, owner["name"])
            if found is None or found["metadata"].get("uid") != owner.get("uid"):
                self.delete("v1/pods", namespace, pod["metadata"]["name"])

    def owned(self, namespace: str, owner: dict) -> list[dict]:
        uid = owner["metadata"].get("uid")
        return [p for _, p in self.live("v1/pods", namespace) if _owner(p).get("uid") == uid]

    def create_pod(self, namespace: str, owner: dict, name: str, labels: dict) -> None:
        template = owner["spec"]["template"]
        meta = template.get("metadata") or {}
        reference = {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"].get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": str(uuid.uuid4()),
                "creationTimestamp": now(),
                "labels": {**(meta.get("labels") or {}), **labels},
                "annotations": meta.get("annotations") or {},
                "ownerReferences": [reference],
            },
            "spec": template["spec"],
            "status": {"phase": "Pending", "qosClass": "Burstable"},
        }
        self.objects["v1/pods", namespace, name] = pod

    def run_deployment(self, namespace: str, deployment: dict) -> None:
        spec = deployment.get("spec") or {}
        want = int(spec.get("replicas", 1))
        pods = [p for p in self.owned(namespace, deployment) if (p.get("status") or {}).get("phase") != "Failed"]
        template_hash = hashlib.sha256(repr(spec.get("template")).encode()).hexdigest()[:10]
        for _ in range(want - len(pods)):
            name = f"{deployment['metadata']['name']}-{template_hash}-{secrets.token_hex(3)[:5]}"
            self.create_pod(namespace, deployment, name, {"pod-template-hash": template_hash})
        extra = sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp", ""), reverse=True)
        for pod in extra[: max(0, len(pods) - want)]:
            self.delete("v1/pods", namespace, pod["metadata"]["name"])
        pods = self.owned(namespace, deployment)
        ready = sum(1 for p in pods if _condition(p, "Ready").get("status") == "True")
        available = "True" if ready >= min(want, 1) else "False"
        status = {
            "observedGeneration": 1,
            "replicas": len(pods),
            "updatedReplicas": len(pods),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "conditions": [
                {"type": "Available", "status": available, "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
            ],
        }
        if (deployment.get("status") or {}) != status:
            self.patch("apps/v1/deployments", namespace, deployment["metadata"]["name"], {"status": status})

    async def run_job(self, namespace: str, job: dict) -> None:
        name, spec = job["metadata"]["name"], job.get("spec") or {}
        status = dict(job.get("status") or {})
        if any(_condition(job, t).get("status") == "True" for t in ("Complete", "Failed")):
            return
        pods = self.owned(namespace, job)
        phases = [(p.get("status") or {}).get("phase", "Pending") for p in pods]
        succeeded, failed = phases.count("Succeeded"), phases.count("Failed")
        active = len(phases) - succeeded - failed
        status.setdefault("startTime", now())
        deadline = spec.get("activeDeadlineSeconds")
        started = datetime.fromisoformat(status["startTime"].replace("Z", "+00:00"))
        ending = ""
        if succeeded >= int(spec.get("completions") or 1):
            ending = "Complete"
        elif failed > int(spec.get("backoffLimit", 6)):
            ending = "Failed:BackoffLimitExceeded:Job has reached the specified backoff limit"
        elif deadline and (datetime.now(UTC) - started).total_seconds() > int(deadline):
            ending = "Failed:DeadlineExceeded:Job was active longer than specified deadline"
        elif active == 0:
            labels = {"batch.kubernetes.io/job-name": name, "job-name": name}
            labels["batch.kubernetes.io/controller-uid"] = job["metadata"].get("uid", "")
            self.create_pod(namespace, job, f"{name}-{secrets.token_hex(3)[:5]}", labels)
            active = 1
        status.update(active=active if not ending else 0, succeeded=succeeded, failed=failed)
        if ending:
            kind, _, rest = ending.partition(":")
            reason, _, message = rest.partition(":")
            conditions = [{"type": kind, "status": "True", "lastTransitionTime": now()}]
            if kind == "Complete":
                conditions.insert(0, {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now()})
                status["completionTime"] = now()
            else:
                conditions[0].update(reason=reason, message=message)
                conditions.insert(0, {"type": "FailureTarget", "status": "True", "reason": reason, "message": message})
                for pod in pods:  # the controller stops what still runs
                    if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                        self.delete("v1/pods", namespace, pod["metadata"]["name"])
            status["conditions"] = conditions
        if status != (job.get("status") or {}):
            self.patch("batch/v1/jobs", namespace, name, {"status": status})

    # -- the kubelet ------------------------------------------------------------------------------------------
    async def run_pods(self) -> None:
        present = {(ns, p["metadata"]["name"]): p for ns, p in self.live("v1/pods")}
        for key in [k for k in self.pods if k not in present]:
            await self.kill(key)
        for key, pod in present.items():
            if key not in self.pods:
                await self.start(key, pod)
            else:
                await self.watch(key, pod)

    def unschedulable(self, pod: dict) -> str:
        for container in (pod.get("spec") or {}).get("containers") or []:
            resources = container.get("resources") or {}
            gpus = max(int(str((resources.get(k) or {}).get("nvidia.com/gpu", 0))) for k in ("requests", "limits"))
            if gpus > 0:
                return "0/1 nodes are available: 1 Insufficient nvidia.com/gpu (the emulated node has no GPUs)."
        return ""

    def set_status(self, key: tuple[str, str], changes: dict) -> None:
        self.patch("v1/pods", key[0], key[1], {"status": changes})

    async def start(self, key: tuple[str, str], pod: dict) -> None:
        namespace, name = key
        spec = pod.get("spec") or {}
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        why = self.unschedulable(pod)
        if why:
            condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": why}
            if _condition(pod, "PodScheduled") != condition:
                self.set_status(key, {"phase": "Pending", "conditions": [condition]})
            return
        ip = _address(self.network, next(self.pod_ips))
        containers = [Container(c["name"], c.get("image", "")) for c in spec.get("containers") or []]
        state = Pod(
            namespace, name, pod["metadata"].get("uid", ""), ip, containers, spec.get("restartPolicy", "Always")
        )
        self.pods[key] = state
        self.patch("v1/pods", namespace, name, {"spec": {"nodeName": NODE_NAME}})
        for container, definition in zip(containers, spec.get("containers") or [], strict=True):
            await self.launch(state, container, definition, pod)
        self.publish(state)

    def volumes(self, pod: dict, state: Pod) -> dict[str, Path]:
        folders = {}
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            name = volume["name"]
            if "persistentVolumeClaim" in volume:
                claim = volume["persistentVolumeClaim"]["claimName"]
                folder = self.state / "volumes" / state.namespace / claim
            else:
                folder = self.state / "pods" / state.namespace / state.name / "volumes" / name
                source = volume.get("secret") or volume.get("configMap")
                if source:
                    resource = "v1/secrets" if "secret" in volume else "v1/configmaps"
                    found = self.get(resource, state.namespace, source.get("secretName") or source.get("name")) or {}
                    folder.mkdir(parents=True, exist_ok=True)
                    for item, value in (found.get("data") or {}).items():
                        data = base64.b64decode(value) if "secret" in volume else str(value).encode()
                        (folder / item).write_bytes(data)
            folder.mkdir(parents=True, exist_ok=True)
            folders[name] = folder
        return folders

    def environment(self, state: Pod, definition: dict, home: Path) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "HOSTNAME": state.name}
        env |= {"PYTHONUNBUFFERED": "1", "KUBERNETES_SERVICE_HOST": "127.0.0.1"}
        cpus = str(((definition.get("resources") or {}).get("limits") or {}).get("cpu", "1"))
        threads = max(1, int(cpus[:-1]) // 1000 if cpus.endswith("m") else int(float(cpus)))
        env |= {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
        for entry in definition.get("env") or []:
            if "value" in entry:
                env[entry["name"]] = str(entry["value"])
            elif ref := (entry.get("valueFrom") or {}).get("secretKeyRef"):
                secret = self.get("v1/secrets", state.namespace, ref["name"]) or {}
                value = (secret.get("data") or {}).get(ref["key"])
                if value is not None:
                    env[entry["name"]] = base64.b64decode(value).decode()
        return env

    def translate(self, arg: str, state: Pod, mounts: list[tuple[str, Path]]) -> str:
        """A container's argument as this machine's process must get it: the pod's address for 0.0.0.0, host
        folders for the image's /app and for volume mounts, cluster IPs for the names of Services."""
        if arg == ANY_ADDRESS:
            return state.ip
        key, sep, value = arg.partition("=") if arg.startswith("--") and "=" in arg else ("", "", arg)
        for path, folder in [*mounts, ("/app", self.workloads)]:
            if value == path or value.startswith(path.rstrip("/") + "/"):
                value = str(folder) + value[len(path.rstrip("/")) :]
                break

        def cluster_ip(match: re.Match) -> str:
            rest = match["rest"]
            if rest and not re.fullmatch(rf"\.{state.namespace}(\.svc(\.cluster\.local)?)?", rest):
                return match[0]
            found = self.get("v1/services", state.namespace, match["name"]) or {}
            return (found.get("spec") or {}).get("clusterIP") or match[0]

        value = SERVICE_NAME.sub(cluster_ip, value)
        return f"{key}{sep}{value}"

    async def launch(self, state: Pod, container: Container, definition: dict, pod: dict) -> None:
        image = IMAGES.get(repository(container.image))
        if image is None:
            known = ", ".join(IMAGES)
            container.waiting = {
                "reason": "ErrImagePull",
                "message": f"the emulated cluster runs only the bundled images ({known}); it pulls no other image",
            }
            return
        argv = list(definition.get("command") or image.entrypoint)
        argv += definition.get("args") or ([] if definition.get("command") else list(image.cmd))
        mounts = [(m["mountPath"], self.volumes(pod, state)[m["name"]]) for m in definition.get("volumeMounts") or []]
        mounts.sort(key=lambda m: -len(m[0]))
        argv = [self.translate(a, state, mounts) for a in argv]
        if argv[0] in ("python", "python3"):
            argv[0] = self.python
        home = self.state / "pods" / state.namespace / state.name / container.name
        home.mkdir(parents=True, exist_ok=True)
        workdir = Path(self.translate(definition.get("workingDir") or image.workdir, state, mounts))
        container.process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=workdir if workdir.is_dir() else home,
            env=self.environment(state, definition, home),
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        container.started_at, container.exit_code, container.waiting = now(), None, {}
        container.pump = asyncio.create_task(self.pump(state, container, container.process))

    async def pump(self, state: Pod, container: Container, process: asyncio.subprocess.Process) -> None:
        """The container's output into the API server's pod log, then its exit."""
        assert process.stdout is not None
        while chunk := await process.stdout.read(65536):
            self.logs[(state.namespace, state.name, container.name)] += chunk
        container.exit_code = await process.wait()
        container.finished_at, container.ended, container.ready = now(), time.monotonic(), False

    async def watch(self, key: tuple[str, str], pod: dict) -> None:
        """Readiness, exits and restarts of a started pod; its status when anything changed."""
        state = self.pods[key]
        for container, definition in zip(state.containers, pod["spec"].get("containers") or [], strict=True):
            if container.process is None:
                continue
            if container.exit_code is None:
                container.ready = await self.probe(state, definition)
            elif self.restarts(state, container) and time.monotonic() - container.ended > RESTART_BACKOFF:
                container.restarts += 1
                await self.launch(state, container, definition, pod)
        self.publish(state)

    @staticmethod
    def restarts(state: Pod, container: Container) -> bool:
        return state.restart == "Always" or (state.restart == "OnFailure" and container.exit_code != 0)

    async def probe(self, state: Pod, definition: dict) -> bool:
        probe = (definition.get("readinessProbe") or {}).get("httpGet")
        if not probe:
            return True
        port = probe.get("port")
        if isinstance(port, str) and not port.isdigit():
            port = next((p["containerPort"] for p in definition.get("ports") or [] if p.get("name") == port), 0)
        assert self.session is not None
        try:
            async with self.session.get(f"http://{state.ip}:{port}{probe.get('path', '/')}") as answer:
                return 200 <= answer.status < 400
        except (aiohttp.ClientError, TimeoutError):
            return False

    def publish(self, state: Pod) -> None:
        statuses = [self.container_status(c) for c in state.containers]
        ended = all(c.exit_code is not None for c in state.containers) and state.restart != "Always"
        failed = any(c.exit_code for c in state.containers)
        waiting = any(c.waiting for c in state.containers)
        phase = ("Failed" if failed else "Succeeded") if ended else "Pending" if waiting else "Running"
        ready = "True" if phase == "Running" and all(c.ready for c in state.containers) else "False"
        status = {
            "phase": phase,
            "hostIP": "127.0.0.1",
            "podIP": state.ip,
            "podIPs": [{"ip": state.ip}],
            "startTime": state.started_at,
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Initialized", "status": "True"},
                {"type": "ContainersReady", "status": ready},
                {"type": "Ready", "status": ready},
            ],
            "containerStatuses": statuses,
        }
        current = self.get("v1/pods", state.namespace, state.name)
        if current is not None and {k: (current.get("status") or {}).get(k) for k in status} != status:
            self.set_status((state.namespace, state.name), status)

    @staticmethod
    def container_status(container: Container) -> dict:
        if container.waiting:
            state: dict = {"waiting": container.waiting}
        elif container.exit_code is None:
            state = {"running": {"startedAt": container.started_at}}
        else:
            reason = "Completed" if container.exit_code == 0 else "Error"
            state = {
                "terminated": {
                    "exitCode": container.exit_code,
                    "reason": reason,
                    "startedAt": container.started_at,
                    "finishedAt": container.finished_at,
                }
            }
        return {
            "name": container.name,
            "image": container.image,
            "imageID": "",
            "ready": container.ready,
            "started": container.exit_code is None and not container.waiting,
            "restartCount": container.restarts,
            "state": state,
        }

    async def kill(self, key: tuple[str, str]) -> None:
        state = self.pods.pop(key, None)
        for container in state.containers if state else []:
            process = container.process
            if process is None or process.returncode is not None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)

    # -- kube-proxy -------------------------------------------------------------------------------------------
    async def run_services(self) -> None:
        wanted = set()
        for namespace, service in self.live("v1/services"):
            name, spec = service["metadata"]["name"], service.get("spec") or {}
            if not spec.get("clusterIP"):
                ip = _address(self.network + 1, next(self.service_ips))
                self.patch("v1/services", namespace, name, {"spec": {"clusterIP": ip, "clusterIPs": [ip]}})
                continue
            if spec["clusterIP"] == "None":
                continue
            for port in spec.get("ports") or []:
                key = (namespace, name, int(port["port"]))
                wanted.add(key)
                if key not in self.proxies:
                    handler = self.forwarder(namespace, name, port)
                    self.proxies[key] = await asyncio.start_server(handler, spec["clusterIP"], key[2])
        for key in [k for k in self.proxies if k not in wanted]:
            self.proxies.pop(key).close()

    def endpoints(self, namespace: str, service: str, port: dict) -> list[tuple[str, int]]:
        """The ready pods the Service selects, each with the port its targetPort names."""
        spec = (self.get("v1/services", namespace, service) or {}).get("spec") or {}
        selector, target = spec.get("selector") or {}, port.get("targetPort", port["port"])
        found = []
        for _, pod in self.live("v1/pods", namespace):
            labels = pod["metadata"].get("labels") or {}
            if not selector or any(labels.get(k) != v for k, v in selector.items()):
                continue
            if _condition(pod, "Ready").get("status") != "True":
                continue
            number = target
            if isinstance(target, str) and not target.isdigit():
                ports = [p for c in pod["spec"].get("containers") or [] for p in c.get("ports") or []]
                number = next((p["containerPort"] for p in ports if p.get("name") == target), None)
            if number is not None:
                found.append((pod["status"]["podIP"], int(number)))
        return sorted(found)

    def upstream(self, namespace: str, service: str) -> str | None:
        """Where the API server's service proxy reaches `service` ("name" or "name:port"): its cluster IP."""
        name, _, port = service.partition(":")
        spec = (self.get("v1/services", namespace, name) or {}).get("spec") or {}
        ports = spec.get("ports") or []
        chosen = next(
            (p for p in ports if str(p["port"]) == port or p.get("name") == port), ports[0] if ports else None
        )
        if not spec.get("clusterIP") or chosen is None:
            return None
        return f"http://{spec['clusterIP']}:{chosen['port']}"

    def forwarder(self, namespace: str, service: str, port: dict):
        async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            endpoints = self.endpoints(namespace, service, port)
            if not endpoints:
                writer.close()
                return
            host, number = endpoints[next(self.turn) % len(endpoints)]
            try:
                up_reader, up_writer = await asyncio.open_connection(host, number)
            except OSError:
                writer.close()
                return

            async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
                with contextlib.suppress(OSError, asyncio.CancelledError):
                    while data := await source.read(65536):
                        sink.write(data)
                        await sink.drain()
                with contextlib.suppress(OSError):
                    sink.close()

            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        return forward
