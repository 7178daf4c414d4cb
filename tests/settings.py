"""Settings for the test suite: the real settings module, fed test-only keys.

DEBUG stays off, as in production. Without REDIS_URL (a quick unit run) the cache and broker live in memory;
`make test` starts PostgreSQL and Redis and exports DATABASE_URL and REDIS_URL, and then those are used.
"""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-" + "k" * 40)
# A fixed test key, and an older one to prove rotation works.
os.environ.setdefault("CREDENTIAL_KEYS", "dGVzdHMtb25seS1jcmVkZW50aWFsLWtleS0wMDAwMDE=")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost,127.0.0.1")

# Parallel runs (pytest-xdist): each worker process gets a Redis database of its own (2, 3, ...: 0 is a demo's, 1 the
# serial suite's), so its broker, channel layer, cache and telemetry rings are its own. The worker, collector and
# web processes a test starts inherit this environment, and with it the same database.
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _xdist_worker.startswith("gw") and os.environ.get("REDIS_URL"):
    os.environ["REDIS_URL"] = f"{os.environ['REDIS_URL'].rsplit('/', 1)[0]}/{2 + int(_xdist_worker[2:])}"

from portal.settings import *  # noqa: E402, F403

if not os.environ.get("REDIS_URL"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CELERY_BROKER_URL = "memory://"
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
STORAGES["staticfiles"] = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}  # noqa: F405
WHITENOISE_USE_FINDERS = True
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {"token": "1000/minute", "cli_login": "1000/minute"}  # noqa: F405
METRICS_PUBLIC = True  # the test servers' scrapes send no token; tests/test_ops.py checks the production default
