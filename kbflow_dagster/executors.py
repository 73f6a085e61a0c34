"""Which Dagster executor runs the steps of a run, chosen where the code location loads.

``$KBFLOW_DAGSTER_EXECUTOR``:

- ``multiprocess`` (the default, Dagster's own): each step in a process of its
  own on the machine running the run;
- ``in_process``: every step in the run's process;
- ``k8s``: each step a Kubernetes job (``dagster-k8s``'s ``k8s_job_executor``);
- ``celery``: each step a Celery task (``dagster-celery``'s ``celery_executor``);
- ``docker``: each step a container (``dagster-docker``'s ``docker_executor``).

The last three need their package installed (``pip install 'kbflow[deploy]'``)
and a lake every worker reaches (object storage: ``--lake s3://...``). See
``deploy/`` for a docker-compose file and Helm values.
"""

from __future__ import annotations

import importlib

import dagster as dg

from kbflow.config.env import env

__all__ = ["EXECUTORS", "executor_from_env"]

#: name -> (module, attribute, the pip install that provides it)
EXECUTORS = {
    "multiprocess": ("dagster", "multiprocess_executor", None),
    "in_process": ("dagster", "in_process_executor", None),
    "k8s": ("dagster_k8s", "k8s_job_executor", "dagster-k8s"),
    "celery": ("dagster_celery", "celery_executor", "dagster-celery"),
    "docker": ("dagster_docker", "docker_executor", "dagster-docker"),
}


def executor_from_env(name: str | None = None) -> dg.ExecutorDefinition:
    """The executor named by ``name`` or ``$KBFLOW_DAGSTER_EXECUTOR`` (default ``multiprocess``)."""
    name = (name or env("KBFLOW_DAGSTER_EXECUTOR") or "multiprocess").strip().lower()
    if name not in EXECUTORS:
        raise ValueError(f"KBFLOW_DAGSTER_EXECUTOR must be one of {', '.join(EXECUTORS)}, got {name!r}")
    module, attribute, package = EXECUTORS[name]
    try:
        return getattr(importlib.import_module(module), attribute)
    except ImportError:
        raise ImportError(
            f"KBFLOW_DAGSTER_EXECUTOR={name} needs {package}: pip install {package} (or 'kbflow[deploy]')"
        ) from None
