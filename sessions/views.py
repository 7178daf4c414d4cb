"""Pages of the file browser: the user's lab space on a cluster, a job's run directory, and the job page's list of
its artefacts. Their buttons call the files API (sessions/api.py); who sees what is jobs/access.py's answer."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse

from jobs import access

from . import paths
from .files import FilesUnavailable, home_space, job_space, opened
from .paths import PathRefused

NO_RUN_DIRECTORY = (
    "The run directory appears when the job starts (and the cluster may have cleaned it since it ended). "
    "Come back once the job is running."
)


def _browse(request, space_of, api_base: str, page_base: str, context: dict):
    relative, error, entries, text, missing = "", "", [], None, False
    viewing = request.GET.get("file")
    try:
        space = space_of()
        context["space_title"] = space.title
        with opened(space) as session:
            if viewing is not None:
                viewing = paths.clean(viewing)
                text = session.text(viewing, tail=request.GET.get("tail") == "1")
                relative = paths.parent(viewing)
            else:
                relative = paths.clean(request.GET.get("path"))
                entries = session.listing(relative)
    except (PathRefused, FilesUnavailable) as exc:
        error = str(exc)
    except FileNotFoundError:
        missing = True
        error = (
            "There is no such file or folder here (any more). Go back to the top folder."
            if relative or viewing
            else NO_RUN_DIRECTORY
        )
    context.update(
        relative=relative,
        crumbs=paths.crumbs(relative),
        entries=entries,
        error=error,
        viewing=viewing,
        viewing_shown=paths.shown(viewing or ""),
        text=text,
        tail=request.GET.get("tail") == "1",
        api_base=api_base,
        page_base=page_base,
        chunk_bytes=settings.GPULAB_FILES_CHUNK_BYTES,
        max_upload_bytes=settings.GPULAB_FILES_MAX_UPLOAD_BYTES,
        max_upload_count=settings.GPULAB_FILES_MAX_UPLOAD_COUNT,
        upload_window_minutes=max(1, round(settings.GPULAB_FILES_UPLOAD_WINDOW_SECONDS / 60)),
    )
    status = 404 if missing else 200
    return render(request, "sessions/browser.html", context, status=status)


@login_required
def index(request):
    clusters = access.visible_clusters(request.user).order_by("name")
    return render(request, "sessions/index.html", {"clusters": clusters})


@login_required
def cluster_files(request, cluster_id: int):
    cluster = access.get_files_cluster(request.user, cluster_id)
    return _browse(
        request,
        lambda: home_space(cluster, request.user),
        reverse("api:files-cluster", args=[cluster.pk]),
        reverse("sessions:cluster_files", args=[cluster.pk]),
        {"cluster": cluster, "writable": True},
    )


@login_required
def job_files(request, job_id):
    job = access.get_job_files(request.user, job_id)
    return _browse(
        request,
        lambda: job_space(job),
        reverse("api:files-job", args=[job.pk]),
        reverse("sessions:job_files", args=[job.pk]),
        {"cluster": job.cluster, "job": job, "writable": job.owner_id == request.user.pk},
    )


@login_required
def job_artefacts(request, job_id):
    """The job page's card: the top of the run directory with download links (loaded after the page)."""
    job = access.get_job_files(request.user, job_id)
    entries, error, missing = [], "", False
    try:
        with opened(job_space(job)) as session:
            entries = session.listing("")
    except (PathRefused, FilesUnavailable) as exc:
        error = str(exc)
    except FileNotFoundError:
        missing = True  # not yet (pending) or no more (cleaned): an empty state, the page reloads it on a new state
    api_base = reverse("api:files-job", args=[job.pk])
    context = {"job": job, "entries": entries, "error": error, "missing": missing, "api_base": api_base}
    return render(request, "sessions/_artefacts.html", context)
