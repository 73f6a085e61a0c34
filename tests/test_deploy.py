"""deploy/: the compose file, the instance, the workspace and the Helm values parse and agree with the code."""

from __future__ import annotations

import yaml
from conftest import REPO

DEPLOY = REPO / "deploy"


def _load(name: str):
    return yaml.safe_load((DEPLOY / name).read_text())


def test_the_compose_file_runs_the_code_location_with_the_lake_on_s3():
    compose = _load("docker-compose.yml")
    services = compose["services"]
    assert {"postgres", "minio", "kbflow", "webserver", "daemon"} <= set(services)
    env = services["kbflow"]["environment"]
    assert env["KBFLOW_LAKE"].startswith("s3://") and env["AWS_ENDPOINT_URL"] == "http://minio:9000"
    assert "/opt/dagster/workspace.yaml" in services["daemon"]["command"]
    assert "kbflow_dagster.definitions" in (DEPLOY / "Dockerfile").read_text()


def test_the_instance_queues_runs_and_launches_them_in_containers():
    instance = _load("dagster.yaml")
    assert instance["run_coordinator"]["class"] == "QueuedRunCoordinator"
    assert instance["run_launcher"]["class"] == "DockerRunLauncher"
    assert {"KBFLOW_LAKE", "AWS_ENDPOINT_URL"} <= set(instance["run_launcher"]["config"]["env_vars"])
    [location] = _load("workspace.yaml")["load_from"]
    assert location["grpc_server"]["port"] == 4000


def test_the_helm_values_name_the_code_location_and_a_known_executor():
    from kbflow_dagster.executors import EXECUTORS

    values = _load("helm/values.yaml")
    [deployment] = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "kbflow_dagster.definitions"]
    env = {e["name"]: e["value"] for e in deployment["env"]}
    assert env["KBFLOW_LAKE"].startswith("s3://") and env["KBFLOW_DAGSTER_EXECUTOR"] in EXECUTORS
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
