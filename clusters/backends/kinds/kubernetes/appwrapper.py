"""AppWrappers (workload.codeflare.dev/v1beta2, the MLBatch project's; its CRD in crds/operators.yaml): a template may
wrap its Job in one, as the MLBatch tutorial wraps its batch inference.

Where Test connection found the AppWrapper CRD (`kube_addons["appwrapper"]`), the AppWrapper is sent as written: with
Kueue it is the object Kueue manages (it carries the queue label and is created suspended, kueue.put_in_queue; Kueue's
Workload is owned by it), and the AppWrapper controller creates the Job it wraps once Kueue lets it go, and follows
that Job's pods. Elsewhere the portal sends the wrapped Job alone, a plain batch/v1 Job like any other template's.
"""

from __future__ import annotations

from .api import KINDS
from .manifests import wrapped_objects
from .settings import cluster_settings

APPWRAPPER = KINDS[("workload.codeflare.dev/v1beta2", "AppWrapper")]

# What the portal's account must be allowed where AppWrappers are sent, and what it cannot do without each.
NEEDED_ACCESS = [
    ("create", "workload.codeflare.dev", "appwrappers", "", "start jobs wrapped in AppWrappers (MLBatch)"),
    ("list", "workload.codeflare.dev", "appwrappers", "", "follow wrapped jobs through their AppWrapper"),
    ("delete", "workload.codeflare.dev", "appwrappers", "", "cancel wrapped jobs"),
]


def available(cluster) -> bool:
    return bool(cluster_settings(cluster).kube_addons.get("appwrapper"))


def unwrapped(objects: list[dict]) -> list[dict]:
    """The objects with each AppWrapper replaced by the objects it wraps: what a cluster without the CRD is sent.
    The wrapped objects were checked as objects of their own when the template was rendered (manifests.py)."""
    found: list[dict] = []
    for obj in objects:
        found += wrapped_objects(obj) if obj.get("kind") == "AppWrapper" else [obj]
    return found
