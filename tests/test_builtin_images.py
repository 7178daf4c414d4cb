"""Every built-in Kubernetes template runs only programs its container images provide.

IMAGES is a small table of what each pinned image offers, every fact with where it comes from. A template that
calls a program (or a subcommand such as `vllm bench serve`) that its image lacks fails here, before a student
meets the error in a pod log.
"""

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusters.backends.kinds.kubernetes.manifests import pod_specs, preview_context, render_manifests
from core.templating.params import parse_schema
from jobs.builtin import builtin_definitions

ROOT = Path(__file__).resolve().parent.parent
COREUTILS = {"sh", "[", "sleep", "touch", "echo", "hostname", "exit", "trap"}  # Ubuntu: dash, coreutils, hostname

IMAGES: dict[str, set[str]] = {
    # docker/Dockerfile of vllm-project/vllm: Ubuntu 22.04 + python3; `vllm` is the package's console script
    # (vllm.entrypoints.cli.main). `vllm bench serve` arrived with PR #13993 (opened 2025-02-27, after v0.7.3) and
    # is in the v0.9.0 API reference (vllm.entrypoints.cli.benchmark.serve); the v0.10.1.1 CLI reference documents
    # the flags the template passes: --backend vllm, --dataset-name random, --random-input-len/-output-len,
    # --max-concurrency, --num-prompts (docs.vllm.ai/en/v0.10.1.1/cli/bench/serve.html).
    "vllm/vllm-openai:v0.10.1.1": COREUTILS
    | {"python3", "vllm serve", "python3 -m vllm.entrypoints.cli.main serve", "vllm bench serve"}
    | {"python3 -m vllm.entrypoints.cli.main bench serve"},
    # The image the template used to pin: `vllm serve` (since v0.5), but no `bench` subcommand (see above).
    "vllm/vllm-openai:v0.7.3": COREUTILS | {"python3", "vllm serve"},
    # kubeflow/mpi-operator build/base/Dockerfile (debian:bullseye, openssh) + openmpi.Dockerfile (openmpi-bin).
    "mpioperator/openmpi:v0.6.0": COREUTILS | {"mpirun"},
    # nvidia/cuda base images are Ubuntu with the CUDA runtime; nvidia-smi itself is mounted from the node's driver
    # by the NVIDIA Container Toolkit when the pod gets a GPU (the images set NVIDIA_DRIVER_CAPABILITIES=utility,…).
    "nvidia/cuda:12.4.1-base-ubuntu22.04": COREUTILS | {"nvidia-smi"},
    # Jupyter Docker Stacks' pytorch-notebook (jupyter/docker-stacks images/pytorch-notebook/Dockerfile on
    # scipy-notebook, minimal-notebook and base-notebook, which installs jupyterlab; `jupyter lab` is its
    # jupyter-lab console script). The 2026-08-07 build ships lab 4.6.2 (the repository's wiki, "Images built
    # during 2026-08"); the cuda12- prefix is the CUDA variant of the same build (docs/using/selecting.md).
    "quay.io/jupyter/pytorch-notebook:2026-08-07": COREUTILS | {"jupyter lab"},
    "quay.io/jupyter/pytorch-notebook:cuda12-2026-08-07": COREUTILS | {"jupyter lab"},
    # ollama/ollama's Dockerfile: Ubuntu with /bin/ollama as the entrypoint (`ollama serve`, `ollama pull`).
    "ollama/ollama:latest": COREUTILS | {"ollama serve", "ollama pull"},
}
# The portal's own images run one script whose options are its argparse flags (workloads/*/Dockerfile ENTRYPOINT).
OWN_ENTRYPOINTS = {
    "gpulab/tinylm-server:": ROOT / "workloads/inference/server.py",
    "gpulab/tinylm-trainer:": ROOT / "workloads/trainer/train.py",
}

SHELLS = {"sh", "bash"}
SHELL_WORDS = {"until", "while", "do", "done", "if", "then", "else", "fi", "!", "$"}
WITH_SUBCOMMANDS = {"vllm", "ollama", "jupyter"}  # programs whose first words choose what runs
SUBCOMMAND = re.compile(r"^[a-z][a-z0-9-]*$")
MPIRUN_VALUE_OPTIONS = {"-np", "-n", "--host", "-H", "--hostfile"}


def invocations(argv: list[str]) -> Iterator[str]:
    """What an argv runs, as the table names it: "sh", "vllm bench serve", "python3 -m mod bench serve", …"""
    if not argv:
        return
    program, rest = argv[0], [str(word) for word in argv[1:]]
    if program in SHELLS and rest[:1] == ["-c"] and len(rest) > 1:
        yield program
        yield from script_invocations(rest[1])
    elif program == "mpirun":  # mpirun's own options, then the program it starts on every rank
        yield program
        while rest and rest[0].startswith("-"):
            rest = rest[2:] if rest[0] in MPIRUN_VALUE_OPTIONS else rest[1:]
        yield from invocations(rest)
    else:
        yield signature(program, rest)


def signature(program: str, rest: list[str]) -> str:
    words = [program]
    if program.startswith("python") and rest[:1] == ["-m"] and len(rest) > 1:
        words += rest[:2]
        rest = rest[2:]
    elif program not in WITH_SUBCOMMANDS:
        return program
    for word in rest:
        if not SUBCOMMAND.fullmatch(word):
            break
        words.append(word)
    return " ".join(words)


def script_invocations(script: str) -> Iterator[str]:
    """Each simple command of a shell script (lists, loops, `$( … )`), by the same names."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    command: list[str] = []
    for token in [*lexer, ";"]:
        if token and set(token) <= set(";&|()"):
            yield from invocations(command)
            command = []
        elif command or token not in SHELL_WORDS:
            command.append(token)


def default_values(schema) -> dict:
    return {param.name: param.default for param in schema}


def containers(definition: dict) -> Iterator[tuple[str, dict]]:
    """(image, container) for every container of the template, once per choice of an `image` parameter."""
    schema = parse_schema(definition["parameters"])
    image_param = next((p for p in schema if p.name == "image"), None)
    for image_choice in image_param.choices if image_param else [None]:
        values = default_values(schema) | ({"image": image_choice} if image_choice else {})
        for obj in render_manifests(definition["body"], schema, values, preview_context()):
            for pod in pod_specs(obj):
                for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
                    yield container["image"], container


def container_commands(container: dict) -> Iterator[list[str]]:
    if container.get("command"):
        yield [*container["command"], *(container.get("args") or [])]
    for hook in (container.get("lifecycle") or {}).values():
        if (hook or {}).get("exec"):
            yield hook["exec"]["command"]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if ((container.get(probe) or {}).get("exec") or {}).get("command"):
            yield container[probe]["exec"]["command"]


def missing_programs(image: str, container: dict) -> list[str]:
    provided = IMAGES[image]
    return sorted({run for argv in container_commands(container) for run in invocations(argv)} - provided)


KUBERNETES_TEMPLATES = [d for d in builtin_definitions() if d.get("backend") == "kubernetes"]


@pytest.mark.parametrize("definition", KUBERNETES_TEMPLATES, ids=lambda d: d["slug"])
def test_builtin_template_runs_only_what_its_images_provide(definition):
    for image, container in containers(definition):
        if any(image.startswith(prefix) for prefix in OWN_ENTRYPOINTS):
            continue  # checked below against the script itself
        assert image in IMAGES, f"{definition['slug']}: add {image} to IMAGES, with the source of what it provides"
        assert not missing_programs(image, container), f"{definition['slug']} ({container['name']}) on {image}"


@pytest.mark.parametrize("definition", KUBERNETES_TEMPLATES, ids=lambda d: d["slug"])
def test_builtin_template_passes_only_options_the_portal_images_accept(definition):
    for image, container in containers(definition):
        script = next((path for prefix, path in OWN_ENTRYPOINTS.items() if image.startswith(prefix)), None)
        if script is None:
            continue
        source = script.read_text()
        for option in [str(a) for a in container.get("args") or [] if str(a).startswith("--")]:
            assert f'"{option}"' in source, f"{definition['slug']}: {script.name} has no {option} option"


def test_the_rayjob_template_runs_the_trainer_with_options_it_accepts():
    """A RayJob's entrypoint is run by a shell on the Ray cluster: the program is the trainer the image holds, and its
    options are train.py's own."""
    definition = next(d for d in KUBERNETES_TEMPLATES if d["slug"] == "k8s-ray-finetune")
    schema = parse_schema(definition["parameters"])
    (rayjob,) = render_manifests(definition["body"], schema, default_values(schema), preview_context())
    argv = shlex.split(rayjob["spec"]["entrypoint"])
    assert argv[:2] == ["python", "/app/trainer/train.py"]  # the image's WORKDIR is /app/trainer (Dockerfile)
    source = OWN_ENTRYPOINTS["gpulab/tinylm-trainer:"].read_text()
    for option in [a for a in argv[2:] if a.startswith("--")]:
        assert f'"{option}"' in source, f"train.py has no {option} option"
    assert {image for image, _ in containers(definition)} == {
        "gpulab/tinylm-trainer:0.1.0-ray-cuda",
        "gpulab/tinylm-trainer:0.1.0-ray-cpu",
    }


def test_the_vllm_template_no_longer_runs_a_command_its_old_image_lacked():
    vllm = next(d for d in KUBERNETES_TEMPLATES if d["slug"] == "k8s-vllm-benchmark")
    generator = next(c for _, c in containers(vllm) if c["name"] == "load-generator")
    assert missing_programs("vllm/vllm-openai:v0.7.3", generator) == ["vllm bench serve"]
    assert {image for image, _ in containers(vllm)} == {"vllm/vllm-openai:v0.10.1.1"}


def test_script_invocations_name_each_simple_command():
    script = 'vllm serve "$M" & until [ -f /x ]; do sleep 1; done; echo on $(hostname) && ollama pull "$M"'
    assert list(script_invocations(script)) == ["vllm serve", "[", "sleep", "echo", "hostname", "ollama pull"]
