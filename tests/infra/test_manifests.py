"""What cannot run here (Docker, Kubernetes) is at least validated: it parses, and what it
refers to exists. The deployment file itself is exercised for real in test_prefect_server.py."""

from __future__ import annotations

import yaml

from tests.conftest import ROOT

INFRA = ROOT / "infra"


def test_compose_file_parses_and_its_build_context_exists():
    compose = yaml.safe_load((INFRA / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "prefect-server", "worker", "dask-scheduler", "dask-worker"} <= set(services)
    for name in ("prefect-server", "worker", "dask-scheduler", "dask-worker"):
        build = services[name]["build"]
        context = (INFRA / build["context"]).resolve()
        assert context == ROOT and (context / build["dockerfile"]).is_file()
    assert "postgresql+asyncpg://" in services["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"]
    assert services["worker"]["environment"]["VASE_DASK_SCHEDULER"] == "tcp://dask-scheduler:8786"


def test_dockerfile_copies_what_exists():
    for line in (INFRA / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY"):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source


def test_kubernetes_manifests_parse():
    documents = list(yaml.safe_load_all((INFRA / "k8s" / "daskcluster.yaml").read_text()))
    kinds = [d["kind"] for d in documents]
    assert kinds == ["DaskCluster", "DaskAutoscaler", "PersistentVolumeClaim"]
    cluster = documents[0]
    assert cluster["apiVersion"] == "kubernetes.dask.org/v1"
    worker = cluster["spec"]["worker"]["spec"]["containers"][0]
    assert worker["args"][:2] == ["dask", "worker"] and cluster["spec"]["scheduler"]["service"]["ports"][0]["port"] == 8786


def test_deployment_file_names_real_entrypoints():
    config = yaml.safe_load((INFRA / "prefect.yaml").read_text())
    for deployment in config["deployments"]:
        module, _, function = deployment["entrypoint"].partition(":")
        assert f"def {function}(" in (ROOT / module).read_text()
    nightly = next(d for d in config["deployments"] if d["name"] == "nightly")
    assert nightly["schedules"][0]["cron"] == "0 3 * * *" and nightly["work_pool"]["name"] == "vase-process"
    backtest = next(d for d in config["deployments"] if d["name"] == "backtest")
    assert "schedules" not in backtest and set(backtest["parameters"]) >= {"store", "kind", "methods", "out", "splits"}
