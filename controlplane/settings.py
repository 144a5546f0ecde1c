"""Settings, all from the environment (12-factor). Every variable is listed in
docs/operators/configuration.md.

Without DATABASE_URL and CELERY_BROKER_URL the control plane runs embedded: SQLite, Celery tasks
in-process, and the single process is the active controller.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def env_secret(name: str) -> str | None:
    """A secret from `NAME`, or from the file `NAME_FILE` names (a secret store's mounted
    file: a Docker or Kubernetes secret), read once at start, surrounding whitespace stripped;
    None when neither is set or the value is empty. Both set is a mistake, refused."""
    path = os.environ.get(f"{name}_FILE", "").strip()
    if path and os.environ.get(name):
        raise ImproperlyConfigured(f"Set {name} or {name}_FILE, not both.")
    if not path:
        return os.environ.get(name, "").strip() or None
    try:
        value = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise ImproperlyConfigured(f"{name}_FILE={path}: {error}") from None
    return value or None


SECRET_KEY = os.environ.get("CP_SECRET_KEY", "dev-only-insecure-key-change-me")
DEBUG = env_bool("CP_DEBUG", False)
ALLOWED_HOSTS = os.environ.get("CP_ALLOWED_HOSTS", "*").split(",")
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CP_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "controlplane.apps.ControlPlaneConfig",
    "brokers.apps.BrokersConfig",
    "replicas.apps.ReplicasConfig",
    "security.apps.SecurityConfig",
    "configs.apps.ConfigsConfig",
    "canary.apps.CanaryConfig",
    "mirror.apps.MirrorConfig",
    "balancer.apps.BalancerConfig",
    "audit.apps.AuditConfig",
    "timeline.apps.TimelineConfig",
    "frontend.apps.FrontendConfig",
    "wire.apps.WireConfig",
]

MIDDLEWARE = [
    "controlplane.middleware.RequestIdMiddleware",
    "controlplane.middleware.ListenerMiddleware",
    "controlplane.middleware.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",  # X-Frame-Options: DENY
    "controlplane.middleware.ContentSecurityPolicyMiddleware",
    "controlplane.middleware.StaticFilesMiddleware",  # WhiteNoise, public listener only
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "controlplane.middleware.ApiErrorMiddleware",
]

# --- Listeners ---------------------------------------------------------------------------
# The public listener (admin API, schema and docs, UI, /metrics) and the internal one (the brokers'
# API and /metrics), like Kafka's client and inter-broker listeners: never the same port. A
# process started as the internal listener (CP_LISTENER=internal) serves only the internal URL
# conf; any process serves it on CP_INTERNAL_PORT, so one process may bind both (`make run`).
CP_PUBLIC_URLCONF = "shell.urls"
CP_INTERNAL_URLCONF = "shell.urls_internal"
CP_LISTENER = os.environ.get("CP_LISTENER", "public").strip().lower() or "public"
if CP_LISTENER not in {"public", "internal"}:
    raise ImproperlyConfigured(f"CP_LISTENER={CP_LISTENER!r}: use public or internal")
# 0: no port is internal (the process's listener is CP_LISTENER's, whatever the port).
CP_INTERNAL_PORT = env_int("CP_INTERNAL_PORT", 8001)
ROOT_URLCONF = CP_INTERNAL_URLCONF if CP_LISTENER == "internal" else CP_PUBLIC_URLCONF
# The server (controlplane.server): a request's headers must arrive within this many seconds of
# its first byte, its body within this many more; slower clients get 408 and are disconnected.
CP_HTTP_HEADER_TIMEOUT_S = float(os.environ.get("CP_HTTP_HEADER_TIMEOUT_S", "10"))
CP_HTTP_BODY_TIMEOUT_S = float(os.environ.get("CP_HTTP_BODY_TIMEOUT_S", "30"))
# The web worker's GIL switch interval (sys.setswitchinterval), in ms (Python's default: 5).
CP_GIL_SWITCH_INTERVAL_MS = float(os.environ.get("CP_GIL_SWITCH_INTERVAL_MS", "5"))
# Brokers' heartbeats and registrations run in a pool of their own, of this many threads, on
# each door: the internal listener (per web worker) and the Kafka controller listeners.
CP_HEARTBEAT_THREADS = env_int("CP_HEARTBEAT_THREADS", 4)
# A broker's heartbeats and registrations per second (per door, per web worker) past which it
# is throttled (controlplane.server.peer_limits); 0: no limit. Kafka's default interval is 2 s.
CP_HEARTBEAT_RATE_LIMIT = float(os.environ.get("CP_HEARTBEAT_RATE_LIMIT", "20"))
CP_HEARTBEAT_RATE_BURST = float(
    os.environ.get("CP_HEARTBEAT_RATE_BURST", str(2 * CP_HEARTBEAT_RATE_LIMIT))
)
# Long-polls (the metadata fetch, the Raft Fetch) parked at once per principal and address;
# one more is answered at once with the empty answer. 0: no limit.
CP_LONG_POLL_MAX_PER_PEER = env_int("CP_LONG_POLL_MAX_PER_PEER", 1000)
WSGI_APPLICATION = "controlplane.wsgi.application"
X_FRAME_OPTIONS = "DENY"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

SQLITE_PATH = os.environ.get("CP_SQLITE_PATH", str(BASE_DIR / "var" / "controlplane.sqlite3"))
if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=600)}
else:
    Path(SQLITE_PATH).parent.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": SQLITE_PATH,
            "OPTIONS": {
                # WAL lets readers run beside the single writer; IMMEDIATE takes the write lock
                # at BEGIN so two writers queue instead of failing mid-transaction.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
            "TEST": {"NAME": str(BASE_DIR / "var" / "test.sqlite3")},
        }
    }
EMBEDDED = not os.environ.get("CELERY_BROKER_URL")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "auth.User"
LOGIN_URL = "/ui/login/"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_TZ = True
STATIC_URL = "/static/"
STATIC_ROOT = os.environ.get("CP_STATIC_ROOT", str(BASE_DIR / "var" / "static"))
Path(STATIC_ROOT).mkdir(parents=True, exist_ok=True)
# WhiteNoise serves the UI's and Swagger UI's files from the app itself (no CDN, no proxy needed);
# before `collectstatic` it finds them in the apps, as the test server does.
WHITENOISE_USE_FINDERS = True

# --- Celery -------------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "memory://")
CELERY_RESULT_BACKEND = os.environ.get(
    "CELERY_RESULT_BACKEND", CELERY_BROKER_URL if not EMBEDDED else "cache+memory://"
)
CELERY_TASK_ALWAYS_EAGER = EMBEDDED
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Task modules not named tasks.py (autodiscovery only finds those).
CELERY_IMPORTS = ["controlplane.token_tasks"]
CELERY_TASK_ROUTES = {
    "controlplane.tasks.controller_event": {"queue": "controller"},
    "replicas.tasks.apply_replica_state_changes": {"queue": "controller"},
}
CELERY_RESULT_EXPIRES = 300
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's own keys (queues, bindings, results): unprefixed unless set, as Celery names them.
CP_CELERY_KEY_PREFIX = os.environ.get("CP_CELERY_KEY_PREFIX", "")
if CP_CELERY_KEY_PREFIX:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"global_keyprefix": CP_CELERY_KEY_PREFIX}
    CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"global_keyprefix": CP_CELERY_KEY_PREFIX}

# --- The controller ----------------------------------------------------------------------
CP_CLUSTER_ID = os.environ.get("CP_CLUSTER_ID", "")
CP_NODE_ID = os.environ.get("CP_NODE_ID", f"{socket.gethostname()}-{os.getpid()}")
CP_CONTROLLER_ID = env_int("CP_CONTROLLER_ID", 3000)
CP_LEASE_MS = env_int("CP_CONTROLLER_LEASE_MS", 6000)
# Threads consuming the controller queue: events waiting together commit together.
CP_CONTROLLER_CONSUMERS = env_int("CP_CONTROLLER_CONSUMERS", 32)
# The controller process's GIL switch interval, in ms (controlplane.runtime.controller's
# tune_controller_process): a commit's writer thread gets the GIL back sooner.
CP_CONTROLLER_GIL_SWITCH_INTERVAL_MS = float(
    os.environ.get("CP_CONTROLLER_GIL_SWITCH_INTERVAL_MS", "1")
)
CP_REQUEST_TIMEOUT_MS = env_int("CP_REQUEST_TIMEOUT_MS", 30000)
CP_BROKER_SESSION_TIMEOUT_MS = env_int("CP_BROKER_SESSION_TIMEOUT_MS", 9000)
CP_BROKER_HEARTBEAT_INTERVAL_MS = env_int("CP_BROKER_HEARTBEAT_INTERVAL_MS", 2000)
# How long a heartbeat that changes the broker's state (unfencing it, a controlled shutdown) waits
# for a busy controller before it is answered with the broker's committed state; it is applied in
# its turn all the same (0: it waits for the controller's answer).
CP_HEARTBEAT_PATIENCE_MS = env_int("CP_HEARTBEAT_PATIENCE_MS", 50)
# A principal named <prefix><id> is bound to broker <id>: it speaks for that broker alone
# (brokers.identity). Other principals with CLUSTER_ACTION are bound to none (Kafka's model).
CP_BROKER_PRINCIPAL_PREFIX = os.environ.get("CP_BROKER_PRINCIPAL_PREFIX", "kafka-broker-")


def broker_id_range(text: str) -> tuple[int, int]:
    """`LOW-HIGH`, inclusive, within Kafka's non-negative int32 node ids."""
    low, _, high = text.strip().partition("-")
    bounds = int(low), int(high)
    if not 0 <= bounds[0] <= bounds[1] <= 2**31 - 1:
        raise ValueError(f"CP_BROKER_ID_RANGE {text!r}: expected LOW-HIGH within 0-2147483647")
    return bounds


# The broker ids a registration may take (Int32.MAX_VALUE left out: Kafka's clients take
# MAX_VALUE - id for the connection to a group coordinator).
CP_BROKER_ID_RANGE = broker_id_range(os.environ.get("CP_BROKER_ID_RANGE", "0-2147483646"))
# The fencing hold-off (controlplane.controller.brokers.fencing.fence_stale_brokers): a full
# disruption in a cluster of at least this many unfenced brokers, or an ingress lag over the
# bound within the last session, holds fencing off, for this long at the most.
CP_FENCING_HOLD_OFF_MIN_BROKERS = env_int("CP_FENCING_HOLD_OFF_MIN_BROKERS", 3)
CP_FENCING_HOLD_OFF_MAX_MS = env_int("CP_FENCING_HOLD_OFF_MAX_MS", 30_000)
CP_FENCING_OVERLOAD_LAG_MS = env_int("CP_FENCING_OVERLOAD_LAG_MS", 2000)
# One commit changes at most this many partitions when brokers leave (fencing, and what a
# controlled shutdown leaves beyond its own commit, below) or a report names many
# (AlterReplicaState); the rest follow in the next commits, the controller free in between
# (Kafka's max.records.per.user.op, 10,000 there: our commit of 10,000 takes 0.3-0.6 s on a
# loaded 2-core machine, and half of it keeps the timer's rounds within 500 ms for the same
# total time, make bench-commit).
CP_MAX_PARTITION_CHANGES_PER_COMMIT = env_int("CP_MAX_PARTITION_CHANGES_PER_COMMIT", 5_000)
# The heartbeat that begins a controlled shutdown changes at most this many partitions in its own
# commit (Kafka's max.records.per.user.op): a broker leading up to 10,000 hands them all over in
# one change, as under Kafka's controller; the rest, if any, follow in the bounds above.
CP_MAX_SHUTDOWN_CHANGES_PER_COMMIT = env_int("CP_MAX_SHUTDOWN_CHANGES_PER_COMMIT", 10_000)
# While a bounded change's slices commit one after the other, each slice commits its log and its
# tables' transaction waits: the brokers follow the log, so they have the whole change that much
# sooner. The controller's timer writes the tables left behind, one commit's per turn of the
# controller, once the change's last slice came (or a promised slice did not come for this
# long), or at once (between the slices) while more than this many records wait (0: the tables
# never wait).
CP_TABLES_BEHIND_IDLE_MS = env_int("CP_TABLES_BEHIND_IDLE_MS", 2000)
CP_TABLES_BEHIND_MAX_RECORDS = env_int("CP_TABLES_BEHIND_MAX_RECORDS", 200_000)
# The controller keeps each commit's records in Kafka's batch format (cp_kafka_batch), written in
# the commit, and the Kafka protocol listener serves those bytes to the brokers' fetches instead of
# encoding the rows again (off: the listener encodes every record from the rows).
CP_STORE_KAFKA_BATCHES = env_bool("CP_STORE_KAFKA_BATCHES", True)
# The metadata fetch (GET /internal/v1/metadata): a broker asking for more records or bytes
# than these gets this many (clamped, never refused; an answer always carries at least one
# record, as Kafka's fetch). Encoded answers are kept per web process, LRU by bytes
# (controlplane.runtime.fetch_cache): every broker asking for one range gets the same bytes.
CP_FETCH_MAX_RECORDS = env_int("CP_FETCH_MAX_RECORDS", 100_000)
CP_FETCH_MAX_BYTES = env_int("CP_FETCH_MAX_BYTES", 32 * 1024 * 1024)
CP_FETCH_CACHE_BYTES = env_int("CP_FETCH_CACHE_BYTES", 128 * 1024 * 1024)
# Static broker configs (Kafka's server.properties): the fallback below dynamic configs.
CP_NUM_PARTITIONS = env_int("CP_NUM_PARTITIONS", 1)
CP_DEFAULT_REPLICATION_FACTOR = env_int("CP_DEFAULT_REPLICATION_FACTOR", 1)
CP_AUTO_LEADER_REBALANCE_ENABLE = env_bool("CP_AUTO_LEADER_REBALANCE_ENABLE", True)
CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS = env_int(
    "CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS", 300
)
CP_UNCLEAN_LEADER_ELECTION_ENABLE = env_bool("CP_UNCLEAN_LEADER_ELECTION_ENABLE", False)
# The key that signs delegation tokens (Kafka's static delegation.token.secret.key): a node
# setting, the same on every node (web, controller, serve_kafka, Celery), never a record of the
# metadata log. Unset: delegation tokens are disabled.
CP_DELEGATION_TOKEN_SECRET_KEY = env_secret("CP_DELEGATION_TOKEN_SECRET_KEY")
CP_STATIC_BROKER_CONFIGS = {
    "num.partitions": str(CP_NUM_PARTITIONS),
    "default.replication.factor": str(CP_DEFAULT_REPLICATION_FACTOR),
    "auto.leader.rebalance.enable": str(CP_AUTO_LEADER_REBALANCE_ENABLE).lower(),
    "leader.imbalance.check.interval.seconds": str(CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS),
    "unclean.leader.election.enable": str(CP_UNCLEAN_LEADER_ELECTION_ENABLE).lower(),
}
if CP_DELEGATION_TOKEN_SECRET_KEY is not None:
    CP_STATIC_BROKER_CONFIGS["delegation.token.secret.key"] = CP_DELEGATION_TOKEN_SECRET_KEY
CELERY_BEAT_SCHEDULE = {
    "apply-waiting-replica-state-changes": {
        "task": "replicas.tasks.apply_replica_state_changes",
        "schedule": 5.0,
    },
    "expire-delegation-tokens": {
        "task": "controlplane.token_tasks.expire_delegation_tokens",
        "schedule": 3600.0,
    },
}
# --- The audit pipeline on Spark -----------------------------------------------------------
CP_AUDIT_EXPORT_PATH = os.environ.get("CP_AUDIT_EXPORT_PATH", str(BASE_DIR / "var" / "audit"))
CP_AUDIT_REPORTS_PATH = os.environ.get(
    "CP_AUDIT_REPORTS_PATH", str(BASE_DIR / "var" / "audit-reports")
)
CP_AUDIT_EXPORT_INTERVAL_SECONDS = env_int("CP_AUDIT_EXPORT_INTERVAL_SECONDS", 3600)
CP_SPARK_MASTER = os.environ.get("CP_SPARK_MASTER", "local[*]")
# Report builds at once on this host (each a Spark JVM), and askers that may wait in a process
# before they are told 429 (audit.reports).
CP_AUDIT_REPORT_BUILDS = env_int("CP_AUDIT_REPORT_BUILDS", 1)
CP_AUDIT_REPORT_QUEUE = env_int("CP_AUDIT_REPORT_QUEUE", 4)
CELERY_BEAT_SCHEDULE["export-audit-trail"] = {
    "task": "audit.tasks.export_audit_periodically",
    "schedule": float(CP_AUDIT_EXPORT_INTERVAL_SECONDS),
}
CP_REDIS_URL = os.environ.get(
    "CP_REDIS_URL", CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else ""
)
# Every key, list and pub/sub channel the control plane itself keeps in Redis starts with this.
CP_REDIS_KEY_PREFIX = os.environ.get("CP_REDIS_KEY_PREFIX", "cp:")
CP_SUPER_USERS = frozenset(
    p.strip() for p in os.environ.get("CP_SUPER_USERS", "").split(";") if p.strip()
)
CP_ALLOW_EVERYONE_IF_NO_ACL_FOUND = env_bool("CP_ALLOW_EVERYONE_IF_NO_ACL_FOUND", False)
CP_MAX_BODY_BYTES = env_int("CP_MAX_BODY_BYTES", 1_048_576)
# The Kafka protocol listener hosted by the embedded web worker (`PLAINTEXT://HOST:PORT`,
# comma-separated); distributed, `manage.py serve_kafka` is a process of its own.
CP_KAFKA_LISTENERS = [
    text.strip() for text in os.environ.get("CP_KAFKA_LISTENERS", "").split(",") if text.strip()
]
# Kafka's listener.security.protocol.map and controller.listener.names for those listeners.
CP_KAFKA_LISTENER_SECURITY_PROTOCOL_MAP = os.environ.get("CP_KAFKA_LISTENER_SECURITY_PROTOCOL_MAP")
CP_KAFKA_CONTROLLER_LISTENER_NAMES = os.environ.get("CP_KAFKA_CONTROLLER_LISTENER_NAMES")
# The broker principal a PLAINTEXT controller listener's connections are (loopback/private only).
CP_KAFKA_CONTROLLER_PLAINTEXT_PRINCIPAL = (
    os.environ.get("CP_KAFKA_CONTROLLER_PLAINTEXT_PRINCIPAL") or None
)
CP_KAFKA_ADVERTISED_HOST = os.environ.get("CP_KAFKA_ADVERTISED_HOST") or None
CP_KAFKA_LISTENER_STARTER = "wire.runner.start_embedded"
CP_KAFKA_PORT_PER_NODE = env_bool("CP_KAFKA_PORT_PER_NODE", False)
# Requests per second per principal on the public listener, per web process (0: no limit).
CP_API_RATE_LIMIT = float(os.environ.get("CP_API_RATE_LIMIT", "200"))
CP_API_RATE_BURST = float(os.environ.get("CP_API_RATE_BURST", str(2 * CP_API_RATE_LIMIT)))
DATA_UPLOAD_MAX_MEMORY_SIZE = CP_MAX_BODY_BYTES

# --- REST API ----------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "controlplane.authentication.BearerTokenAuthentication",
        "controlplane.authentication.PrincipalSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["controlplane.api.permissions.IsPrincipal"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["controlplane.api.parsers.BoundedJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "controlplane.api.pagination.Pagination",
    "DEFAULT_THROTTLE_CLASSES": ["controlplane.api.throttles.PrincipalRateThrottle"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "controlplane.http_errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Kafka control plane",
    "DESCRIPTION": "The cluster's controller: single, fenced writer of cluster metadata.",
    "VERSION": "1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_INCLUDE_SCHEMA": False,
    # The documented API is the whole API, both listeners' paths (/api/schema/, `spectacular`).
    "DEFAULT_GENERATOR_CLASS": "shell.api.schema.BothListenersSchemaGenerator",
    # Every operation's errors (Kafka's body, each status it may answer).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "shell.api.schema.document_errors",
    ],
}

# Every field of a line is escaped (controlplane.log_context): a client cannot forge a line.
CP_LOG_FORMAT = os.environ.get("CP_LOG_FORMAT", "plain").strip().lower() or "plain"
if CP_LOG_FORMAT not in {"plain", "json"}:
    raise ImproperlyConfigured(f"CP_LOG_FORMAT={CP_LOG_FORMAT!r}: use plain or json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {
            "()": "controlplane.log_context.SafeFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
        },
        "json": {"()": "controlplane.log_context.JsonFormatter"},
    },
    "filters": {"request_id": {"()": "controlplane.log_context.RequestIdLogFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": CP_LOG_FORMAT,
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("CP_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
