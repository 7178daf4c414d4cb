"""REST API for the file browser: the same spaces, paths and refusals as the pages (sessions/files.py).

Every endpoint exists twice, under /api/v1/files/clusters/<cluster id>/ (the user's own lab space on that cluster)
and /api/v1/files/jobs/<job id>/ (a job's run directory); the page's buttons call these endpoints too.
"""

from __future__ import annotations

import posixpath
from functools import wraps

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api_schema import ErrorSerializer

from . import archive_slots, paths, upload_limits
from .files import FilesUnavailable, archive, opened, openssh_range
from .paths import PathRefused
from .serializers import (
    ListingSerializer,
    NameSerializer,
    PathSerializer,
    TextSerializer,
    UploadStateSerializer,
)
from .spaces import space_for
from .streaming import archive_response, file_response, preferring, release_database

PATH = OpenApiParameter("path", str, description="Relative to the space's top folder; empty for the top folder.")
ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="The path or name is refused (`..`, a link leading out, …)."),
    404: OpenApiResponse(ErrorSerializer, description="No such file, or a space you may not see."),
    409: OpenApiResponse(ErrorSerializer, description="Files are not available here (cluster kind, identity, down)."),
}
ARCHIVE_BUSY = {429: OpenApiResponse(ErrorSerializer, description="As many folder downloads under way as allowed.")}


def _refusals(method):
    """PathRefused → 400, missing → 404, FilesUnavailable → 409, each with a `detail` for the user."""

    @wraps(method)
    def wrapper(self, request, *args, **kwargs):
        try:
            return method(self, request, *args, **kwargs)
        except PathRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        except FileNotFoundError:
            return Response({"detail": "No such file or folder here."}, status=status.HTTP_404_NOT_FOUND)
        except FilesUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)

    return wrapper


class SpaceView(APIView):
    write = False

    def space(self, request, kwargs):
        return space_for(
            request.user, cluster_id=kwargs.get("cluster_id"), job_id=kwargs.get("job_id"), write=self.write
        )


class ListView(SpaceView):
    @extend_schema(parameters=[PATH], responses={200: ListingSerializer, **ERRORS})
    @_refusals
    def get(self, request, **kwargs):
        space = self.space(request, kwargs)
        relative = paths.clean(request.query_params.get("path"))
        with opened(space) as session:
            entries = session.listing(relative)
        return Response(
            ListingSerializer({"space": space.title, "path": relative, "entries": entries}).data,
        )


class DownloadView(SpaceView):
    @extend_schema(
        description="A file, streamed; `Range: bytes=a-b` gives part of it (206). A folder needs `archive`.",
        parameters=[PATH, OpenApiParameter("archive", str, enum=["zip", "tar"], description="A folder as .zip/.tar")],
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            206: OpenApiTypes.BINARY,
            **ERRORS,
            **ARCHIVE_BUSY,
        },
    )
    @_refusals
    def get(self, request, **kwargs):
        space = self.space(request, kwargs)
        relative = paths.clean(request.query_params.get("path"))
        fmt = request.query_params.get("archive", "")
        if fmt not in ("", "zip", "tar"):
            raise PathRefused("archive is zip or tar.")
        # Every access check and database read is done: nothing below touches the ORM, so the cluster and the browser
        # may take their time without holding one of the pool's connections (sessions/streaming.py).
        release_database()
        if fmt:
            return self._archive(request, space, relative, fmt)
        with opened(space) as session:  # refusals answered before the stream starts
            real, attrs = session.resolve_file(relative)

        def over_sftp(start: int, length: int):
            with opened(space) as session:
                real, _ = session.resolve_file(relative)
                yield from session.read_range(real, start, length)

        def stream(start: int, length: int):
            return preferring(openssh_range(space, real, start, length), over_sftp, start, length)

        return file_response(request, stream, paths.shown(posixpath.basename(relative)), attrs.st_size or 0)

    def _archive(self, request, space, relative: str, fmt: str):
        slot = archive_slots.take(request.user.pk)
        if slot is None:
            refused = Response({"detail": archive_slots.refusal()}, status=status.HTTP_429_TOO_MANY_REQUESTS)
            refused["Retry-After"] = "10"
            return refused
        try:
            with opened(space) as session:  # refusals (and the archive's limits) answered before the stream starts
                listed = session.walk(relative)
        except BaseException:
            slot.give_back()
            raise
        if request.method == "HEAD":  # the headers alone: nothing will stream
            slot.give_back()

        def chunks():
            with opened(space) as session:
                yield from archive(session, listed, fmt)

        name = paths.shown(posixpath.basename(relative)) or "files"
        return archive_response(request, lambda: slot.holding(chunks()), name, fmt)


class TextView(SpaceView):
    @extend_schema(
        parameters=[PATH, OpenApiParameter("tail", bool, description="The file's end instead of its start")],
        responses={200: TextSerializer, **ERRORS},
    )
    @_refusals
    def get(self, request, **kwargs):
        space = self.space(request, kwargs)
        relative = paths.clean(request.query_params.get("path"))
        with opened(space) as session:
            text, size, cut = session.text(relative, tail=request.query_params.get("tail") in ("1", "true"))
        return Response(TextSerializer({"path": relative, "text": text, "size": size, "cut": cut}).data)


class ChangeView(SpaceView):
    write = True

    def valid(self, serializer_class, request):
        serializer = serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


class MkdirView(ChangeView):
    @extend_schema(request=NameSerializer, responses={201: PathSerializer, **ERRORS})
    @_refusals
    def post(self, request, **kwargs):
        data = self.valid(NameSerializer, request)
        with opened(self.space(request, kwargs)) as session:
            session.mkdir(data["path"], data["name"])
        folder = paths.clean(data["path"])
        return Response({"path": f"{folder}/{data['name']}" if folder else data["name"]}, status=201)


class RenameView(ChangeView):
    @extend_schema(
        description="`path` is renamed to `name`, in the same folder.",
        request=NameSerializer,
        responses={200: PathSerializer, **ERRORS},
    )
    @_refusals
    def post(self, request, **kwargs):
        data = self.valid(NameSerializer, request)
        with opened(self.space(request, kwargs)) as session:
            new_path = session.rename(data["path"], data["name"])
        return Response({"path": new_path})


class DeleteView(ChangeView):
    @extend_schema(
        description="A file, or a folder with everything in it.",
        request=PathSerializer,
        responses={204: None, **ERRORS},
    )
    @_refusals
    def post(self, request, **kwargs):
        data = self.valid(PathSerializer, request)
        with opened(self.space(request, kwargs)) as session:
            session.delete(data["path"])
        return Response(status=204)


NAME = OpenApiParameter("name", str, required=True, description="The file's name in the folder `path`.")


class UploadView(ChangeView):
    @extend_schema(
        description="How much of an interrupted upload arrived: send the next chunk from `received`.",
        parameters=[PATH, NAME],
        responses={200: UploadStateSerializer, **ERRORS},
    )
    @_refusals
    def get(self, request, **kwargs):
        name = request.query_params.get("name", "")
        with opened(self.space(request, kwargs)) as session:
            received = session.upload_offset(request.query_params.get("path", ""), name)
        return Response({"name": name, "received": received, "size": None, "complete": False})

    @extend_schema(
        description=(
            "One chunk of a file, the raw bytes as the body, written at `offset` (0 starts over). The file appears "
            "under its name once `size` bytes arrived. A chunk at another offset than what arrived changes nothing: "
            "the answer says where to go on. A chunk must say its Content-Length, at most FILES_CHUNK_BYTES (413 "
            "beyond); files started within FILES_UPLOAD_WINDOW_SECONDS are counted as they arrive, at most "
            "FILES_MAX_UPLOAD_COUNT."
        ),
        parameters=[
            PATH,
            NAME,
            OpenApiParameter("size", int, required=True, description="The whole file's size in bytes"),
            OpenApiParameter("offset", int, required=True, description="Where this chunk starts"),
        ],
        request={"application/octet-stream": OpenApiTypes.BINARY},
        responses={200: UploadStateSerializer, 413: ErrorSerializer, **ERRORS},
    )
    @_refusals
    def put(self, request, **kwargs):
        query = request.query_params
        try:
            size, offset = int(query["size"]), int(query["offset"])
        except (KeyError, ValueError):
            raise PathRefused("size and offset are whole numbers of bytes.") from None
        if size < 0 or not 0 <= offset <= size:
            raise PathRefused("offset must lie within the file.")
        try:
            length = upload_limits.chunk_length(request.META)
        except upload_limits.ChunkTooLarge as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        name, folder, space = query.get("name", ""), query.get("path", ""), self.space(request, kwargs)
        if offset == 0:  # a new file (or one started over): counted as it arrives
            upload_limits.count_new_file(request.user.pk, f"{space.cluster.pk}:{space.root}\0{folder}\0{name}")
        with opened(space) as session:
            body = _Bounded(request.stream, length)
            received = session.upload_chunk(folder, name, size, offset, body)
        return Response({"name": name, "received": received, "size": size, "complete": received >= size})


class _Bounded:
    """The chunk's body, never more than it declared (an empty body reads as nothing)."""

    def __init__(self, stream, length: int):
        self.stream, self.left = stream, length

    def read(self, size: int = -1) -> bytes:
        if self.stream is None or self.left <= 0:
            return b""
        data = self.stream.read(self.left if size < 0 else min(size, self.left))
        self.left -= len(data)
        return data
