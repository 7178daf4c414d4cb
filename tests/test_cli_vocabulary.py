"""The command-line client (cli/) and the portal stay in step: the job states it treats as ended and the fields its
tables read are the portal's own. The client imports nothing from the portal, so these are the checks that catch a
rename on either side."""

import ast
from pathlib import Path

from gpulab_cli import job_ids
from gpulab_cli.commands import catalog, jobs

from core.choices import TERMINAL_STATES


def test_the_client_s_ended_states_are_the_portal_s_terminal_states():
    portal_states = {str(state) for state in TERMINAL_STATES}
    assert portal_states == set(job_ids.TERMINAL_STATES)
    assert job_ids.COMPLETED in TERMINAL_STATES


def test_every_field_the_client_shows_is_in_the_api_schema(api_for, alice):
    schemas = api_for(alice).get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    job_fields = {field for _, field in (*jobs.LIST_COLUMNS, *jobs.STATUS_FIELDS)} | {"id", "wait", "error"}
    assert job_fields <= set(schemas["Job"]["properties"])
    assert {field for _, field in jobs.WAIT_FIELDS} | {"reason", "position"} <= set(schemas["Wait"]["properties"])
    template_fields = {field for _, field in (*catalog.LIST_COLUMNS, *catalog.DETAIL_FIELDS)} | {"parameters"}
    assert template_fields <= set(schemas["Template"]["properties"])
    assert {"offset", "data", "eof", "done"} <= set(schemas["Log"]["properties"])


def test_the_client_imports_nothing_from_the_portal():
    portal_packages = {"portal", "core", "courses", "clusters", "jobs", "telemetry", "ops", "workers", "signon"}
    portal_packages |= {"sessions", "notifications", "passwords", "django", "rest_framework"}
    for path in Path(job_ids.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            assert not {name.split(".")[0] for name in names} & portal_packages, f"{path}: {names}"


# Keys the client reads that are not fields of the API's objects: HTTP headers, its own options and profiles file,
# and the keys of a template's parameter schema (core/templating/params.py), which the API serves as they are.
NOT_API_FIELDS = {
    "Accept",
    "Authorization",
    "Content-Length",
    "Content-Range",
    "Location",
    "User-Agent",
    "profile",
    "profiles",
    "default",
    "url",
}
PARAMETER_KEYS = {"name", "type", "label", "default", "min", "max", "choices", "max_length"}
# The job terminal's WebSocket messages (`gpulab shell`): no REST schema has them; sessions/terminal.py's wire.
TERMINAL_WIRE = {"closed", "notice"}


def keys_read_by_the_client() -> dict[str, set[str]]:
    """Every `x["key"]` and `x.get("key")` in the client's source: {key: the files that read it}."""
    found: dict[str, set[str]] = {}
    for path in Path(job_ids.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            key = None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                key = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            if isinstance(key, str) and not key.startswith("/"):  # Portal.get("/compare/"): an endpoint, not a key
                found.setdefault(key, set()).add(path.name)
    return found


def test_every_key_the_client_reads_is_a_field_of_the_api_schema(api_for, alice):
    schemas = api_for(alice).get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    fields = set().union(*(set(schema.get("properties", {})) for schema in schemas.values()))
    unknown = {
        key: files
        for key, files in keys_read_by_the_client().items()
        if key not in fields | NOT_API_FIELDS | PARAMETER_KEYS | TERMINAL_WIRE
    }
    assert not unknown, f"fields the API schema does not have: {unknown}"


def test_the_terminal_messages_the_client_reads_are_the_ones_the_portal_sends():
    from sessions import terminal

    wire = terminal.__doc__.split("Wire:")[1]
    assert all(f'{{"{key}":' in wire for key in TERMINAL_WIRE), wire
