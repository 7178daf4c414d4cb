"""Reading settings from the environment. Every secret may also come from a file: NAME_FILE=/run/secrets/..."""

import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured


def load_dotenv(path: Path) -> None:
    """KEY=value lines from a developer's .env into the environment; variables already set win."""
    if not path.is_file():
        return
    for line in path.read_text().splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and not key.startswith("#"):
            os.environ.setdefault(key.strip(), value.strip().strip("'\""))


def env_str(name: str, default: str = "") -> str:
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_path} cannot be read: {exc.strerror}") from exc
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = env_str(name, "")
    if not value:
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use 1 or 0.")


def env_int(name: str, default: int) -> int:
    value = env_str(name, "")
    if not value:
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from exc


def env_float(name: str, default: float) -> float:
    value = env_str(name, "")
    if not value:
        return default
    try:
        return float(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from exc


def port_range(value: str, name: str) -> tuple[int, int]:
    """(low, high) of "low-high", unprivileged ports with low <= high; ImproperlyConfigured otherwise."""
    low, sep, high = value.partition("-")
    try:
        bounds = (int(low), int(high)) if sep else (int(low), int(low))
    except ValueError:
        bounds = (0, 0)
    if not 1024 <= bounds[0] <= bounds[1] <= 65535:
        raise ImproperlyConfigured(f"{name}={value!r}: give unprivileged ports as low-high, e.g. 8800-8999.")
    return bounds


def env_ports(name: str, default: list[int]) -> frozenset[int]:
    """Port numbers, comma-separated."""
    try:
        return frozenset(int(port) for port in env_list(name, [str(port) for port in default]))
    except ValueError:
        raise ImproperlyConfigured(f"{name} lists port numbers separated by commas, e.g. 22,5432,6379.") from None


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    value = env_str(name, "")
    if not value:
        return list(default or [])
    return [item.strip() for item in value.split(",") if item.strip()]


def database_from_url(url: str, *, sqlite_default: Path, pool_size: int = 0) -> dict:
    """The DATABASES['default'] entry for a postgres:// or sqlite:/// URL (SQLite file when the URL is empty).

    With `pool_size`, PostgreSQL connections come from a psycopg pool of at most that many instead of staying
    open per thread (CONN_MAX_AGE); the two do not mix.
    """
    if not url:
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(sqlite_default)}
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": unquote(parsed.path) or str(sqlite_default)}
    if parsed.scheme in {"postgres", "postgresql"}:
        options: dict = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
        if pool_size:
            # A request waits up to 10 s for a free connection, then fails instead of queueing without end.
            options["pool"] = {"min_size": min(2, pool_size), "max_size": pool_size, "timeout": 10}
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": 0 if pool_size else 60,
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": options,
        }
    raise ImproperlyConfigured(
        f"DATABASE_URL scheme {parsed.scheme!r} is not supported; use postgres:// or sqlite:///."
    )
