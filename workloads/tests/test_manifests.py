"""Kubernetes manifests validated against the official schemas (no cluster here), and the Dockerfiles' promises."""

import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from conftest import WORKLOADS

MANIFESTS = sorted((WORKLOADS / "inference" / "k8s").glob("*.yaml"))
DOCKERFILES = [WORKLOADS / "inference" / "Dockerfile", WORKLOADS / "trainer" / "Dockerfile"]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_is_valid_kubernetes(path: Path):
    for document in yaml.safe_load_all(path.read_text()):
        kubernetes_validate.validate(document, "1.34.0", strict=True)


def test_the_set_is_complete_and_consistent():
    docs = {
        d["kind"]: d
        for p in MANIFESTS
        for d in yaml.safe_load_all(p.read_text())
        if d["metadata"]["name"] == "tinylm-server" or d["kind"] == "PersistentVolumeClaim"
    }
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "PersistentVolumeClaim"} <= set(docs)
    pod = docs["Deployment"]["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert docs["Service"]["spec"]["selector"] == docs["Deployment"]["spec"]["selector"]["matchLabels"]
    assert (
        pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
        == docs["PersistentVolumeClaim"]["metadata"]["name"]
    )
    assert docs["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]["name"] == docs["Deployment"]["metadata"]["name"]
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True


def test_an_invalid_manifest_is_caught():
    bad = yaml.safe_load((WORKLOADS / "inference" / "k8s" / "service.yaml").read_text())
    bad["spec"]["ports"][0]["port"] = "eleven"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, "1.34.0", strict=True)


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.parent.name)
def test_dockerfile_is_slim_pinned_non_root_with_cpu_and_cuda_variants(path: Path):
    text = path.read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:\d+\.\d+\.\d+-slim", text, re.M)
    assert re.search(r"^ARG VARIANT=cpu$", text, re.M) and '"$VARIANT" = "cuda"' in text
    assert re.search(r"^USER 10001$", text, re.M)
    assert "torch==${TORCH_VERSION}" in text and re.search(r"^ARG TORCH_VERSION=2\.13\.0$", text, re.M)
    for source in copied(text):
        assert (WORKLOADS / source).exists(), f"{path.name} copies {source}, which does not exist"


def test_the_server_image_holds_every_module_the_server_imports():
    sources = set(copied((WORKLOADS / "inference" / "Dockerfile").read_text()))
    modules = {p.relative_to(WORKLOADS).as_posix() for p in (WORKLOADS / "inference").glob("*.py")}
    assert modules - sources == set(), "add these to inference/Dockerfile's COPY lines"
    assert "inference/routers" in sources and "trainer/model.py" in sources


def copied(dockerfile: str) -> list[str]:
    """The sources of every COPY instruction (all its words but the last), continuation lines joined."""
    text = dockerfile.replace("\\\n", " ")
    return [source for words in re.findall(r"^COPY (.+)$", text, re.M) for source in words.split()[:-1]]
