import os

from celery import Celery
from celery.app import trace

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

app = Celery("controlplane")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# A controller answer may hold a secret shown once (a new delegation token's HMAC): the worker
# logs that a task succeeded and how long it took, never what it returned.
trace.LOG_SUCCESS = "Task %(name)s[%(id)s] succeeded in %(runtime)ss"
