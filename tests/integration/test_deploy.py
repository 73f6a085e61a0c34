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


def test_the_kuberay_job_runs_the_ingest_on_ray_with_the_lake_on_s3():
    job = _load("kuberay/rayjob.yaml")
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    assert "--engine ray" in job["spec"]["entrypoint"]
    spec = job["spec"]["rayClusterSpec"]
    import ray

    assert spec["rayVersion"] == ray.__version__  # the image's Ray is the one pyproject pins
    assert spec["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"  # the head runs no task
    groups = {g["groupName"]: g for g in spec["workerGroupSpecs"]}
    assert set(groups) == {"cpu", "gpu"}
    gpu = groups["gpu"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert gpu["nvidia.com/gpu"] == 1
    for group in [spec["headGroupSpec"], *groups.values()]:
        [container] = group["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["KBFLOW_LAKE"].startswith("s3://")  # a local path is one machine's: every pod reads S3
        assert container["envFrom"][0]["secretRef"]["name"] == "kbflow-s3"
    assert "'.[deploy,ray]'" in (DEPLOY / "Dockerfile").read_text()
