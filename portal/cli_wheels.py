"""/cli/: the `gpulab` command for labs without internet. The page says how to install it from this portal; the
wheels (gpulab-cli's and the pure-Python ones it needs, made by scripts/cli_wheels.sh into CLI_WHEELS_DIR) are
served under /cli/wheels/ as a page of links, which pip reads with --find-links.

Public: pip cannot sign in, and the wheels are the portal's open client. Only the names listed in the folder are
served (no path from the request reaches the file system), each link carries its SHA-256 so that pip checks what
it downloaded.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404
from django.shortcuts import render
from django.views.decorators.http import require_safe

WHEEL = re.compile(r"^[A-Za-z0-9_.+-]+-py3-none-any\.whl$")


@dataclass(frozen=True)
class Wheel:
    name: str
    size: int
    sha256: str


# SHA-256 of each wheel by (path, size, mtime): the files change only when scripts/cli_wheels.sh runs again, and an
# anonymous request must not make the server read and hash every wheel.
_digests: dict[tuple[str, int, int], str] = {}


def _files() -> list[Path]:
    folder = Path(settings.CLI_WHEELS_DIR)
    if not folder.is_dir():
        return []
    return [p for p in sorted(folder.iterdir()) if WHEEL.match(p.name) and p.is_file() and not p.is_symlink()]


def wheels() -> list[Wheel]:
    found = []
    for path in _files():
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        if key not in _digests:
            _digests[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        found.append(Wheel(path.name, stat.st_size, _digests[key]))
    return found


@require_safe
def cli_page(request):
    listed = wheels()
    client = next((w for w in listed if w.name.startswith("gpulab_cli-")), None)
    context = {
        "wheels": listed,
        "client": client,
        "index": request.build_absolute_uri("/cli/wheels/"),
        "portal": request.build_absolute_uri("/").rstrip("/"),
    }
    return render(request, "cli.html", context)


@require_safe
def wheel_index(request):
    """The wheels as links with their hashes: what pip's --find-links reads."""
    return render(request, "cli_wheels.html", {"wheels": wheels()})


@require_safe
def wheel_file(request, name: str):
    if not WHEEL.match(name) or name not in {path.name for path in _files()}:
        raise Http404("No such wheel.")
    path = Path(settings.CLI_WHEELS_DIR) / name
    return FileResponse(path.open("rb"), as_attachment=True, content_type="application/octet-stream")
