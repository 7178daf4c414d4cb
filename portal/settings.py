"""Settings, all from the environment (see README "Configuration"). DEBUG is off unless asked for."""

from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from .env import database_from_url, env_bool, env_float, env_int, env_list, env_ports, env_str, port_range
from .sign_on import sign_on_settings

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("DATA_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)

# Development-only fallbacks; with DEBUG off the portal refuses to start on them.
_DEV_SECRET_KEY = "dev-only-insecure-secret-key-never-use-in-production-0123456789"  # noqa: S105
_DEV_CREDENTIAL_KEY = "ZGV2LW9ubHktaW5zZWN1cmUtY3JlZGVudGlhbC1rZXk="

SECRET_KEY = env_str("SECRET_KEY", _DEV_SECRET_KEY if DEBUG else "")
# Rotating SECRET_KEY: the old key here keeps sessions and signed links valid until they expire.
SECRET_KEY_FALLBACKS = env_list("SECRET_KEY_FALLBACKS")
# Fernet keys for cluster credentials, newest first; older keys still decrypt (see `manage.py rotate_credentials`).
CREDENTIAL_KEYS = env_list("CREDENTIAL_KEYS", [_DEV_CREDENTIAL_KEY] if DEBUG else [])

if not DEBUG:
    if (
        len(SECRET_KEY) < 50
        or len(set(SECRET_KEY)) < 5
        or SECRET_KEY == _DEV_SECRET_KEY
        or SECRET_KEY.startswith("django-insecure")
    ):
        raise ImproperlyConfigured(
            "SECRET_KEY is missing or too weak. Set SECRET_KEY (or SECRET_KEY_FILE) to 50 random characters, "
            "e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))'."
        )
    if not CREDENTIAL_KEYS or _DEV_CREDENTIAL_KEY in CREDENTIAL_KEYS:
        raise ImproperlyConfigured(
            "CREDENTIAL_KEYS is missing. Set CREDENTIAL_KEYS (or CREDENTIAL_KEYS_FILE) to one or more Fernet keys, "
            "comma-separated, newest first: python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())'."
        )
for _key in CREDENTIAL_KEYS:
    try:
        Fernet(_key)
    except ValueError as exc:
        raise ImproperlyConfigured("CREDENTIAL_KEYS holds a value that is not a Fernet key.") from exc

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from static/, not a CDN
    "courses",
    "clusters",
    "jobs",
    "telemetry",
    "experiments",  # comparisons of runs (and, later, sweeps)
    "sessions",  # the student's workspace: files, terminal, JupyterLab (label "workspace")
    "ops",
    "passwords",
    "axes",  # sign-in lockout (see "Sign-in throttling" below)
    "notifications",  # email, browser and course-webhook messages about jobs (notifications.notify)
    "labs",  # guided labs: sections of steps with checks, the students' lab pages and the class's progress grid
    "signon",  # campus sign-in (OIDC, LDAP) and course rosters kept in step with campus groups
    "sweeps",  # a template's parameters swept as one job array
]

MIDDLEWARE = [
    "ops.health.ProbeMiddleware",  # /healthz, /readyz, /metrics: before host checks and the HTTPS redirect
    "core.logs.RequestIdMiddleware",
    "portal.request_guard.RefuseNulMiddleware",  # a NUL in a URL is a 400 here, not a 500 from PostgreSQL
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "portal.htmx_sign_in.HtmxSignInMiddleware",  # a panel's refresh after the session ended: the page goes to sign-in
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a lockout into the login page's message
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"
ASGI_APPLICATION = "portal.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "courses.context_processors.teaching",
            ],
            "libraries": {"local_times": "core.local_times"},  # a template library for every app, from below them
        },
    },
]

# The web process (portal/asgi.py sets GPULAB_ASGI) takes PostgreSQL connections from a pool: ASGI runs each
# request's sync code in a thread of its own, so per-thread persistent connections would mean a new connection,
# and its few milliseconds of set-up, on every request. Celery's workers keep persistent connections, because
# a pool must not cross the fork of their child processes.
DATABASE_POOL_SIZE = env_int("DATABASE_POOL_SIZE", 10) if env_bool("GPULAB_ASGI") else 0
DATABASES = {
    "default": database_from_url(
        env_str("DATABASE_URL"), sqlite_default=DATA_DIR / "portal.sqlite3", pool_size=DATABASE_POOL_SIZE
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}

# Live telemetry: Channels over Redis pub/sub (one message per web process per group, not one per socket;
# bench/telemetry_fanout.py measures both layers), and the 10-minute ring of frames on the same server.
TELEMETRY_REDIS_URL = env_str("TELEMETRY_REDIS_URL", REDIS_URL)
CHANNEL_LAYER_BACKEND = env_str("CHANNEL_LAYER_BACKEND", "channels_redis.pubsub.RedisPubSubChannelLayer")
# The collector publishes what changed every tick: a sample waits at most this long before it is sent.
TELEMETRY_TICK_SECONDS = env_float("TELEMETRY_TICK_SECONDS", 0.1)
# A GPU idle this long nudges its student and flags the job on the class dashboard (the seed checklist: 5 min).
TELEMETRY_IDLE_SECONDS = env_float("TELEMETRY_IDLE_SECONDS", 300.0)
# How often the collector stores the series it has kept since (ten-second buckets; one row per job per flush).
TELEMETRY_FLUSH_SECONDS = env_float("TELEMETRY_FLUSH_SECONDS", 60.0)
_REDIS_DB = TELEMETRY_REDIS_URL.rsplit("/", 1)[1] if TELEMETRY_REDIS_URL.count("/") > 2 else "0"
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": CHANNEL_LAYER_BACKEND,
        # Pub/sub channels ignore Redis database numbers: the prefix keeps a demo and a test run on one server apart.
        "CONFIG": {"hosts": [TELEMETRY_REDIS_URL], "prefix": f"gpulab:channels:{_REDIS_DB}"},
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "signon.credentials.PasswordLengthValidator"},  # what the sign-in forms accept (signon/credentials.py)
]
# Sign-in: local passwords, campus OIDC, campus LDAP, any combination (portal/sign_on.py; docs/operations.md
# "Single sign-on"). Sets AUTHENTICATION_BACKENDS (django-axes' lockout first) and each method's settings.
globals().update(sign_on_settings())
# What that sets and the portal reads, declared for the type checker; the OIDC and LDAP ones exist where enabled.
SIGNON_LOCAL_PASSWORDS: bool
SIGNON_OIDC: bool
SIGNON_LDAP: bool
OIDC_OP_ISSUER: str
OIDC_OP_END_SESSION_ENDPOINT: str
OIDC_RP_CLIENT_ID: str
OIDC_CLOCK_LEEWAY_SECONDS: float
LOGIN_REDIRECT_URL_FAILURE: str
SIGNON_OIDC_USERNAME_CLAIM: str
SIGNON_OIDC_GROUPS_CLAIM: str
SIGNON_OIDC_STAFF_GROUPS: list[str]
SIGNON_OIDC_CLUSTER_USERNAME_CLAIM: str
SIGNON_OIDC_BUTTON: str
AUTH_LDAP_SERVER_URI: str
AUTH_LDAP_START_TLS: bool
AUTH_LDAP_BIND_DN: str
AUTH_LDAP_BIND_PASSWORD: str
AUTH_LDAP_CONNECTION_OPTIONS: dict[int, float]
AUTH_LDAP_GROUP_SEARCH: Any  # django_auth_ldap.config.LDAPSearch, only with LDAP_GROUP_SEARCH_BASE
SIGNON_LDAP_USERNAME_ATTR: str
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "jobs:catalog"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
# The `gpulab` command's wheels, served at /cli/ for labs without internet (scripts/cli_wheels.sh makes them).
CLI_WHEELS_DIR = Path(env_str("CLI_WHEELS_DIR", str(DATA_DIR / "cli-wheels")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG

# Behind TLS (a reverse proxy that sets X-Forwarded-Proto), set HTTPS=1: `manage.py check --deploy` is then clean.
if env_bool("HTTPS", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 3600)
    # A portal on a shared university domain may need these off: HSTS_INCLUDE_SUBDOMAINS=0 HSTS_PRELOAD=0.
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("HSTS_PRELOAD", True)
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "core.api_schema.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "portal.api_limits.Pagination",
    "DEFAULT_PARSER_CLASSES": ["portal.api_limits.BoundedJSONParser"],  # the token endpoint also takes forms
    "PAGE_SIZE": 100,
    # cli_login: browser-confirmed sign-ins started per address (a class behind one NAT starts sixty at once).
    "DEFAULT_THROTTLE_RATES": {"token": "30/minute", "cli_login": "120/minute"},
    # The client is REMOTE_ADDR: uvicorn sets it from X-Forwarded-For only for TRUSTED_PROXIES (see below).
    "NUM_PROXIES": 0,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "GPU Lab Portal API",
    "DESCRIPTION": "Launch and follow lab jobs on the course's SLURM and Kubernetes clusters.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],  # the schema and docs need a login
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # A job's state is one enum in the schema wherever it appears (a job, a lab step's quick fix), under one name.
    "ENUM_NAME_OVERRIDES": {"JobStateEnum": "core.choices.JobState"},
}

# Celery: the job row is the record; a task message may come twice and must change nothing the second time.
CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 600)}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # workers log through LOGGING too (JSON with the ids)
CELERY_IMPORTS = ["workers.mail", "workers.notify", "workers.labs"]  # tasks queued by name from the apps
# Course webhooks have a queue of their own, so a slow chat server never holds up mail or jobs; a worker started
# without -Q consumes both.
CELERY_TASK_QUEUES = (Queue("celery"), Queue("webhooks"))

# How the portal follows jobs.
GPULAB_POLL_INTERVAL = env_float("POLL_INTERVAL_SECONDS", 5.0)
GPULAB_SUBMIT_STALE_AFTER = env_int("SUBMIT_STALE_AFTER_SECONDS", 120)  # a submit this old with no answer is retried
GPULAB_SUBMIT_RETRIES = env_int("SUBMIT_RETRIES", 3)  # transient failures (unreachable host) before submit_failed
GPULAB_SUBMIT_RETRY_DELAY = env_float("SUBMIT_RETRY_DELAY_SECONDS", 10.0)
GPULAB_LOST_AFTER = env_int("LOST_AFTER_SECONDS", 900)  # gone from the scheduler this long → lost
# A job the scheduler will never start (e.g. PartitionNodeLimit) is released from the quota at once and cancelled
# after this long, so an admin who meant to raise the limit has time to.
GPULAB_NEVER_STARTS_GRACE = env_int("NEVER_STARTS_GRACE_SECONDS", 900)
# How often each cluster's partition limits (nodes, GPUs per node, time) are asked again; Test connection asks too.
GPULAB_PARTITION_LIMITS_REFRESH = env_float("PARTITION_LIMITS_REFRESH_SECONDS", 900.0)
GPULAB_SSH_CONNECT_TIMEOUT = env_float("SSH_CONNECT_TIMEOUT_SECONDS", 10.0)
GPULAB_SSH_COMMAND_TIMEOUT = env_float("SSH_COMMAND_TIMEOUT_SECONDS", 30.0)
GPULAB_LOG_CHUNK_BYTES = env_int("LOG_CHUNK_BYTES", 64 * 1024)
# The file browser (sessions/files.py): the largest file one upload may carry, how many files one upload may hold,
# the size of each chunk the browser sends (an interrupted upload resumes at the last whole chunk), how much of a
# text file the viewer shows (its start, or its end for "tail"), and how many files a folder archive may hold.
# A finished job's log is copied into the portal, up to this size, so its page shows it after scratch is cleaned.
GPULAB_KEPT_LOG_BYTES = env_int("KEPT_LOG_BYTES", 1024 * 1024)
GPULAB_FILES_MAX_UPLOAD_BYTES = env_int("FILES_MAX_UPLOAD_BYTES", 4 * 2**30)
# Files one person may start uploading within the window, counted by the server as they arrive (a page's selection
# goes up one file after another). A chunk is a request body streamed to the cluster, never read whole, so it has
# its own bound (FILES_CHUNK_BYTES, 413 beyond) rather than MAX_REQUEST_BODY_BYTES, which bounds what is read whole.
GPULAB_FILES_MAX_UPLOAD_COUNT = env_int("FILES_MAX_UPLOAD_COUNT", 200)
GPULAB_FILES_UPLOAD_WINDOW_SECONDS = env_float("FILES_UPLOAD_WINDOW_SECONDS", 600.0)
GPULAB_FILES_CHUNK_BYTES = env_int("FILES_CHUNK_BYTES", 16 * 2**20)
GPULAB_FILES_VIEW_BYTES = env_int("FILES_VIEW_BYTES", 512 * 1024)
# A folder archive is refused, in words, before it streams when its folder holds more entries (folders and files) or
# more bytes than these: one listing on the cluster counts them (sessions/files.py, Session.walk).
GPULAB_FILES_ARCHIVE_MAX_ENTRIES = env_int("FILES_ARCHIVE_MAX_ENTRIES", 10_000)
GPULAB_FILES_ARCHIVE_MAX_BYTES = env_int("FILES_ARCHIVE_MAX_BYTES", 2 * 2**30)
# Folder archives one user may have under way at once, across web processes (sessions/archive_slots.py).
GPULAB_FILES_ARCHIVES_PER_USER = env_int("FILES_ARCHIVES_PER_USER", 2)
# Large downloads read by OpenSSH's client at once per web process (each a login on the cluster); more go over the
# pooled SFTP connection, slower but without another login (sessions/streaming.py).
GPULAB_FILES_OPENSSH_DOWNLOADS = env_int("FILES_OPENSSH_DOWNLOADS", 8)
# JupyterLab on SLURM (clusters/backends/slurm_family/notebook.py): the ports a session's server may listen on (its job
# picks a free one in this range and reports which; the proxy opens no other), and ports it never opens even inside the
# range. The portal's own services are added to these where it runs (its database, Redis, web server, the cluster's
# SSH and slurmrestd ports); the defaults name SSH, HTTP(S), MySQL, PostgreSQL, Redis and SLURM's daemons.
GPULAB_NOTEBOOK_PORTS = port_range(env_str("NOTEBOOK_PORT_RANGE", "8800-8999"), "NOTEBOOK_PORT_RANGE")
GPULAB_NOTEBOOK_DENIED_PORTS = env_ports(
    "NOTEBOOK_DENIED_PORTS", [22, 80, 443, 3306, 5432, 6379, 6817, 6818, 6819, 6820, 8000]
)
# The job terminal (sessions/terminal.py): closed after this long without a keystroke (it holds an SSH channel and
# a step in the student's allocation), and how often it checks that the job still runs.
GPULAB_TERMINAL_IDLE_SECONDS = env_float("TERMINAL_IDLE_SECONDS", 30 * 60.0)
GPULAB_TERMINAL_CHECK_SECONDS = env_float("TERMINAL_CHECK_SECONDS", 10.0)
GPULAB_LAB_FILES_DIR = Path(env_str("LAB_FILES_DIR", str(BASE_DIR / "workloads")))
# Named pauses that widen race windows in fault-injection tests (see core/failpoints.py); empty in production.
GPULAB_FAILPOINTS = env_str("FAILPOINTS", "")

# How often course terms are checked: notices before the end, and the course's jobs stopped once it has passed.
GPULAB_TERM_CHECK_INTERVAL = env_float("TERM_CHECK_INTERVAL_SECONDS", 60.0)

# Lab sessions (courses/lab_sessions.py): how long one may last and how far ahead it may be booked; ended and
# cancelled sessions' reservations are removed (and stuck bookings asked again) this often (seconds).
GPULAB_LAB_SESSION_MIN_MINUTES = env_int("LAB_SESSION_MIN_MINUTES", 15)
GPULAB_LAB_SESSION_MAX_MINUTES = env_int("LAB_SESSION_MAX_MINUTES", 8 * 60)
GPULAB_LAB_SESSION_MAX_DAYS_AHEAD = env_int("LAB_SESSION_MAX_DAYS_AHEAD", 180)
GPULAB_LAB_SESSION_SWEEP_INTERVAL = env_float("LAB_SESSION_SWEEP_SECONDS", 60.0)

# The schedule is one fixed interval: kept in memory, so a beat killed mid-write never leaves a corrupt file behind.
# GPU-hour budgets and idle rules are evaluated this often (seconds); tests shorten it.
GPULAB_GOVERNANCE_INTERVAL = env_int("GPULAB_GOVERNANCE_INTERVAL", 60)
CELERY_BEAT_SCHEDULER = "celery.beat:Scheduler"
CELERY_BEAT_SCHEDULE = {
    "poll-clusters": {"task": "workers.tasks.poll_clusters", "schedule": GPULAB_POLL_INTERVAL},
    "refresh-partition-limits": {
        "task": "workers.tasks.refresh_partition_limits",
        "schedule": GPULAB_PARTITION_LIMITS_REFRESH,
    },
    "check-terms": {"task": "workers.tasks.check_terms", "schedule": GPULAB_TERM_CHECK_INTERVAL},
    "notification-reminders": {"task": "workers.notify.send_reminders", "schedule": 60.0},
    "evaluate-budgets": {"task": "workers.tasks.evaluate_budgets", "schedule": GPULAB_GOVERNANCE_INTERVAL},
    "sweep-lab-sessions": {"task": "workers.tasks.sweep_lab_sessions", "schedule": GPULAB_LAB_SESSION_SWEEP_INTERVAL},
    "end-idle-sessions": {"task": "workers.tasks.end_idle_sessions", "schedule": GPULAB_GOVERNANCE_INTERVAL},
    # A sweep is resumed only once its submit is SUBMIT_STALE_AFTER old: looking twice in that time is soon enough.
    "resume-stale-sweeps": {
        "task": "sweeps.tasks.resume_stale_sweeps",
        "schedule": max(GPULAB_POLL_INTERVAL, GPULAB_SUBMIT_STALE_AFTER / 2),
    },
}

# --- Hostile input and sign-in (README "Configuration", docs/operations.md "Sign-in throttling") -------------
# Request bodies: the API's are a few KiB; template bodies and rosters (files) are far below this.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BODY_BYTES", 1024 * 1024)
# Prometheus /metrics: scrapers send "Authorization: Bearer <METRICS_TOKEN>". Without a token it answers 404,
# unless METRICS_PUBLIC=1 (the default only with DEBUG=1).
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
METRICS_PUBLIC = env_bool("METRICS_PUBLIC", DEBUG)
# Sign-in lockout (django-axes): LOGIN_FAILURE_LIMIT failed sign-ins for one username, or from one client
# address, lock that username or address for LOGIN_LOCKOUT_MINUTES; an admin unlocks earlier (Access attempts
# in /admin/, or `manage.py axes_reset_username NAME`). The page and /api/v1/token/ both count.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = env_float("LOGIN_LOCKOUT_MINUTES", 15.0) / 60  # hours
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # tries while locked do not extend the lockout
AXES_LOCKOUT_CALLABLE = "portal.login_throttle.lockout_response"
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False  # no banner on every manage.py command; lockouts are still logged with username and address
# The client address is REMOTE_ADDR only. uvicorn writes the X-Forwarded-For client there when, and only when,
# the connection comes from one of TRUSTED_PROXIES (scripts pass it as --forwarded-allow-ips); any other
# sender's X-Forwarded-For is ignored, so a client cannot pick the address its failures count against.
# DRF's token throttle reads the same address (REST_FRAMEWORK["NUM_PROXIES"] = 0).
AXES_IPWARE_META_PRECEDENCE_ORDER = ("REMOTE_ADDR",)

# --- Mail: invitations and password resets (README "Configuration", docs/operations.md "Mail") ---------------
# Sent by Celery tasks through the site's SMTP relay, never inside a request; a relay that is down is retried.
# A developer's checkout (DEBUG=1) with no EMAIL_HOST prints the mails in the worker's log instead.
EMAIL_BACKEND = (
    "django.core.mail.backends." + ("console" if DEBUG and not env_str("EMAIL_HOST") else "smtp") + ".EmailBackend"
)
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)  # STARTTLS, usually port 587
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)  # TLS from the first byte, usually port 465
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT_SECONDS", 30)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "GPU Lab Portal <gpulab@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL are both set; pick one (587: TLS, 465: SSL).")
# The address people use to reach the portal, for the links in mails (a task has no request to read it from).
# --- Notifications (README "Configuration") -----------------------------------------------------------------
NOTIFY_MAX_PER_HOUR = env_int("NOTIFY_MAX_PER_HOUR", 30)  # per person and channel (per course for its webhook)
NOTIFY_WEBHOOK_TIMEOUT = env_float("NOTIFY_WEBHOOK_TIMEOUT_SECONDS", 5.0)
NOTIFY_WEBHOOK_RETRIES = env_int("NOTIFY_WEBHOOK_RETRIES", 4)  # then the message is given up
NOTIFY_WEBHOOK_RETRY_DELAY = env_float("NOTIFY_WEBHOOK_RETRY_DELAY_SECONDS", 30.0)  # doubled at each retry
# Webhooks post only to public addresses; networks listed here (CIDR, comma-separated) are allowed as well.
NOTIFY_WEBHOOK_ALLOWED_NETWORKS = env_list("NOTIFY_WEBHOOK_ALLOWED_NETWORKS")

PORTAL_URL = env_str("PORTAL_URL", "http://localhost:8000").rstrip("/")
# How long an invitation's and a reset's link works. Django checks every link against PASSWORD_RESET_TIMEOUT,
# so it is the longer of the two; passwords.tokens checks each kind against its own.
INVITATION_EXPIRY_SECONDS = int(env_float("INVITATION_EXPIRY_DAYS", 7.0) * 86400)
PASSWORD_RESET_EXPIRY_SECONDS = int(env_float("PASSWORD_RESET_EXPIRY_HOURS", 2.0) * 3600)
PASSWORD_RESET_TIMEOUT = max(INVITATION_EXPIRY_SECONDS, PASSWORD_RESET_EXPIRY_SECONDS)
# Reset requests: at most this many per hour for one email address, and from one client address.
PASSWORD_RESET_PER_ADDRESS = env_int("PASSWORD_RESET_PER_ADDRESS_PER_HOUR", 3)
PASSWORD_RESET_PER_CLIENT = env_int("PASSWORD_RESET_PER_CLIENT_PER_HOUR", 20)

# LOG_FORMAT=json (the container images and the chart): one object per line with request_id and job_id.
LOG_FORMAT = env_str("LOG_FORMAT", "plain")
if LOG_FORMAT not in {"plain", "json"}:
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r}: use plain or json.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"ids": {"()": "core.logs.ContextFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "core.logs.JsonFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["ids"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"paramiko": {"level": "WARNING"}},
}
